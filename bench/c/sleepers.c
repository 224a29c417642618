/* N threads that only sleep: tasks for the dashboard's probe to watch, costing no CPU.
   Usage: sleepers N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *sleeper(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5000;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 1; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, sleeper, NULL) != 0) {
            fprintf(stderr, "sleepers: only %d threads\n", i);
            break;
        }
    }
    for (;;)
        pause();
}
