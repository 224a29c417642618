/*
 * chat_c: a C chat client speaking the chatroom benchmark 1.0.1 protocol (docs/workloads.md),
 * written for bench/chat.sh as the peer schedlab's chat-client is measured against.
 * Per user one connection with a send thread and a receive thread (64 KiB stacks, like
 * schedlab's), all waiting on a SysV barrier; the clock starts just before the release and
 * stops when every thread has posted its room's done semaphore.
 *
 * usage: chat_c server_ip_addr [num_rooms] [num_messages] [server_port]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/time.h>
#include <unistd.h>

#include "chat.h"

static int barrier = -1, done_sems = -1;

/* Removes the sets on a termination signal (semctl is async-signal-safe). */
static void on_term(int sig)
{
	if (barrier >= 0)
		semctl(barrier, 0, IPC_RMID);
	if (done_sems >= 0)
		semctl(done_sems, 0, IPC_RMID);
	_exit(128 + sig);
}

/* One side of a user's connection: its send thread or its receive thread. */
struct user {
	int fd, room, sends;
	long messages;
	long count;
	pthread_t t;
};

static void die(const char *what)
{
	fprintf(stderr, "chat_c: %s: %s\n", what, strerror(errno));
	on_term(-127);
}

static void sem_op(int id, int num, int delta)
{
	if (sem_add(id, num, delta) < 0)
		die("semop");
}

/* A send or receive thread: waits for the release, moves its messages, posts its room. */
static void *transfer(void *arg)
{
	struct user *u = arg;
	char msg[MSG];
	memset(msg, 'x', sizeof(msg));
	sem_op(barrier, 0, 0);
	for (long i = 0; i < u->messages; i++) {
		if ((u->sends ? write_full(u->fd, msg, MSG) : read_full(u->fd, msg, MSG)) < 0)
			die(u->sends ? "send" : "recv");
		u->count++;
	}
	sem_op(done_sems, u->room, 1);
	return NULL;
}

static int connect_to(struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0)
		die("connect");
	return fd;
}

int main(int argc, char **argv)
{
	need_server(argc, "chat_c server_ip_addr [num_rooms] [num_messages] [server_port]");
	int rooms = argc > 2 ? atoi(argv[2]) : 10;
	int messages = argc > 3 ? atoi(argv[3]) : 100;
	int port = argc > 4 ? atoi(argv[4]) : 9999;
	if (rooms < 1 || messages < 1) {
		fprintf(stderr, "chat_c: rooms and messages must be positive\n");
		return 1;
	}
	struct sockaddr_in addr = server_address("chat_c", argv[1], port);
	end_on_signals(on_term);
	int cfd = connect_to(&addr);
	int start[2] = { rooms, messages };
	if (write(cfd, start, sizeof(start)) != sizeof(start))
		die("write start");

	barrier = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	done_sems = semget(IPC_PRIVATE, rooms, IPC_CREAT | 0600);
	if (barrier < 0 || done_sems < 0)
		die("semget");
	semctl(barrier, 0, SETVAL, 1);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	int n = rooms * USERS;
	struct user *senders = calloc(n, sizeof(*senders));
	struct user *receivers = calloc(n, sizeof(*receivers));
	for (int r = 0; r < rooms; r++) {
		printf("Creating room number %d ...\n", r + 1);
		for (int j = 0; j < USERS; j++) {
			int i = r * USERS + j, fd = connect_to(&addr);
			senders[i] = (struct user){ .fd = fd, .room = r, .sends = 1, .messages = messages };
			receivers[i] = (struct user){ .fd = fd, .room = r, .messages = (long)messages * 19 };
			if (pthread_create(&senders[i].t, &attr, transfer, &senders[i]) ||
			    pthread_create(&receivers[i].t, &attr, transfer, &receivers[i]))
				die("pthread_create");
		}
		printf("%d connections so far.\n", (r + 1) * USERS);
	}
	char b;
	if (read(cfd, &b, 1) != 1 || b != 0x11) {
		fprintf(stderr, "chat_c: no START from the server\n");
		return 1;
	}
	printf("Running the test ...\n");
	fflush(stdout);
	struct timeval t0, t1;
	gettimeofday(&t0, NULL);
	sem_op(barrier, 0, -1);
	for (int r = 0; r < rooms; r++)
		sem_op(done_sems, r, -2 * USERS);
	gettimeofday(&t1, NULL);
	printf("Test complete.\n");
	b = 0x22;
	if (write(cfd, &b, 1) != 1)
		die("write END");
	long sent = 0, received = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(senders[i].t, NULL);
		pthread_join(receivers[i].t, NULL);
		sent += senders[i].count;
		received += receivers[i].count;
		close(senders[i].fd);
	}
	semctl(barrier, 0, IPC_RMID);
	semctl(done_sems, 0, IPC_RMID);
	double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_usec - t0.tv_usec) / 1e6;
	printf("Simulator version  : 1.0.1\n");
	printf("Messages sent      : %ld\n", sent);
	printf("Messages received  : %ld\n", received);
	printf("Total messages     : %ld\n", sent + received);
	printf("Elapsed time       : %.2f seconds\n", secs);
	printf("Average throughput : %.0f messages per second\n", (sent + received) / secs);
	return 0;
}
