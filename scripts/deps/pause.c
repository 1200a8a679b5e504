/* pause: the process that holds a pod's namespaces for scripts/cluster's
 * containerd (its sandbox image, built by scripts/image, since no registry
 * is reached). It does what Kubernetes' own pause does: sleep until a
 * signal, exit on SIGINT or SIGTERM, reap the zombies of a shared PID
 * namespace. Built static: the image has no libc. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { _exit(0); }

static void reap(int sig) {
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

int main(void) {
	struct sigaction term = {.sa_handler = stop}, child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not PID 1\n");
	if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 || sigaction(SIGCHLD, &child, NULL) < 0)
		return 1;
	for (;;)
		pause();
}
