/* The fixture's bottom room. */
int low_a(void);
int low_b(void);
