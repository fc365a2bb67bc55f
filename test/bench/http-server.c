/* See http-server.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http-server.h"

static int listener;

/* One connection: each request (up to its blank line) gets the response. */
static void *serve_connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                "Content-Length: 6\r\n\r\nhello\n";
    char buf[8192];
    size_t have = 0;

    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *end;
        while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            if (write(fd, reply, sizeof(reply) - 1) != (ssize_t)sizeof(reply) - 1)
                goto out;
            size_t used = (size_t)(end + 4 - buf);
            memmove(buf, end + 4, have - used);
            have -= used;
            buf[have] = '\0';
        }
        if (have == sizeof(buf) - 1)
            break;
    }
out:
    close(fd);
    return NULL;
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, serve_connection, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

int bench_http_server_start(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    pthread_t t;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        bind(listener, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(listener, 64) < 0 ||
        getsockname(listener, (struct sockaddr *)&a, &len) < 0 ||
        pthread_create(&t, NULL, serve, NULL) != 0)
        return -1;
    pthread_detach(t);
    return ntohs(a.sin_port);
}
