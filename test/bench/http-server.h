/* A loopback HTTP/1.1 server with keep-alive on threads of the calling
 * process: every request on a connection, up to its blank line, gets
 * "200 OK" with a 6-byte body ("hello\n"). For bench-http and
 * scripts/trace-hops, whose http.get and curl loops fetch from it. */
#ifndef JPT_BENCH_HTTP_SERVER_H
#define JPT_BENCH_HTTP_SERVER_H

/* Starts it on 127.0.0.1: its port, or -1. It runs until the process
 * exits. */
int bench_http_server_start(void);

#endif
