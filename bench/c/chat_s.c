/*
 * chat_s: a C chat server speaking the chatroom benchmark 1.0.1 protocol (docs/workloads.md),
 * written for bench/chat.sh as the peer schedlab's chat-server is measured against.
 * Same shape as schedlab's: per data connection a receive thread that reads a 100-byte message
 * and posts the connection's semaphore in its room's SysV set, and a send thread that waits on
 * it and writes the message to the other 19 users. Threads have 64 KiB stacks like schedlab's.
 *
 * usage: chat_s server_ip_addr [server_port] [runs]   (runs: exit after that many; 0 = forever)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/ipc.h>
#include <unistd.h>

#include "chat.h"

struct user {
	int fd;
	int room_sem;
	int num;
	int *room_fds;
	long messages;
	char buf[MSG];
	long received, sent;
	pthread_t rt, st;
};

/* The current run's semaphore sets, removed by a termination signal (semctl is signal-safe). */
static int *live_sems;
static volatile int live_rooms;

static void on_term(int sig)
{
	for (int r = 0; r < live_rooms; r++)
		semctl(live_sems[r], 0, IPC_RMID);
	_exit(128 + sig);
}

static void die(const char *what)
{
	fprintf(stderr, "chat_s: %s: %s\n", what, strerror(errno));
	on_term(-127);
}

static void *receiver(void *arg)
{
	struct user *u = arg;
	for (long i = 0; i < u->messages; i++) {
		if (read_full(u->fd, u->buf, MSG) < 0) {
			fprintf(stderr, "chat_s: receive failed\n");
			on_term(-127);
		}
		u->received++;
		if (sem_add(u->room_sem, u->num, 1) < 0)
			die("semop");
	}
	return NULL;
}

static void *sender(void *arg)
{
	struct user *u = arg;
	for (long i = 0; i < u->messages; i++) {
		if (sem_add(u->room_sem, u->num, -1) < 0)
			die("semop");
		for (int j = 0; j < USERS; j++) {
			if (j == u->num)
				continue;
			if (write_full(u->room_fds[j], u->buf, MSG) < 0) {
				fprintf(stderr, "chat_s: send failed\n");
				on_term(-127);
			}
			u->sent++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	need_server(argc, "chat_s server_ip_addr [server_port] [runs]");
	int port = argc > 2 ? atoi(argv[2]) : 9999;
	long runs = argc > 3 ? atol(argv[3]) : 0;
	struct sockaddr_in addr = server_address("chat_s", argv[1], port);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 4096) < 0)
		die("listen");
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	end_on_signals(on_term);

	for (long run = 1; runs == 0 || run <= runs; run++) {
		int cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			die("accept");
		int start[2];
		if (read_full(cfd, start, sizeof(start)) < 0 || start[0] < 1 || start[1] < 1 ||
		    start[0] > 1000 || start[1] > 1000000) {
			fprintf(stderr, "chat_s: bad start message\n");
			close(cfd);
			run--;
			continue;
		}
		int rooms = start[0], messages = start[1], n = rooms * USERS;
		printf("SRV: client connected, rooms = %d messages = %d\n", rooms, messages);
		fflush(stdout);
		struct user *users = calloc(n, sizeof(*users));
		int *fds = calloc(n, sizeof(int));
		int *sems = calloc(rooms, sizeof(int));
		live_sems = sems;
		for (int r = 0; r < rooms; r++) {
			sems[r] = semget(IPC_PRIVATE, USERS, IPC_CREAT | 0600);
			if (sems[r] < 0)
				die("semget");
			live_rooms = r + 1;
		}
		for (int i = 0; i < n; i++) {
			fds[i] = accept(lfd, NULL, NULL);
			if (fds[i] < 0)
				die("accept");
		}
		for (int i = 0; i < n; i++) {
			struct user *u = &users[i];
			u->fd = fds[i];
			u->num = i % USERS;
			u->room_sem = sems[i / USERS];
			u->room_fds = &fds[i - u->num];
			u->messages = messages;
			if (pthread_create(&u->rt, &attr, receiver, u) ||
			    pthread_create(&u->st, &attr, sender, u))
				die("pthread_create");
		}
		char b = 0x11;
		if (write(cfd, &b, 1) != 1)
			die("write START");
		if (read(cfd, &b, 1) != 1 || b != 0x22)
			fprintf(stderr, "chat_s: no END from the client\n");
		long received = 0, sent = 0;
		for (int i = 0; i < n; i++) {
			pthread_join(users[i].rt, NULL);
			pthread_join(users[i].st, NULL);
			received += users[i].received;
			sent += users[i].sent;
			close(fds[i]);
		}
		live_rooms = 0;
		for (int r = 0; r < rooms; r++)
			semctl(sems[r], 0, IPC_RMID);
		close(cfd);
		printf("SRV(%ld) %ld messages received, %ld messages sent\n", run, received, sent);
		fflush(stdout);
		free(users);
		free(fds);
		free(sems);
	}
	return 0;
}
