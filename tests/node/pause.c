/*
 * The pod sandbox ("pause") container of the single-node Kubernetes test:
 * holds the pod's namespaces by sleeping forever, exits 0 on SIGINT/SIGTERM,
 * and, as PID 1 of a pod sharing its PID namespace, reaps orphaned children.
 *
 * Built by hack/build-images.sh:  gcc -static -Os -s -o pause pause.c
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

static int on(int sig, void (*handler)(int), int flags)
{
	struct sigaction action = { .sa_handler = handler, .sa_flags = flags };

	sigemptyset(&action.sa_mask);
	return sigaction(sig, &action, NULL);
}

int main(void)
{
	if (on(SIGINT, stop, 0) || on(SIGTERM, stop, 0) ||
	    on(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART))
		return 1;
	for (;;)
		pause();
}
