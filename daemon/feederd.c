/* feederd.c — the Feeder daemon's main(): configuration, then the server.
 *
 * feederd runs in the foreground and logs to stderr with syslog priority
 * prefixes; systemd (Type=notify) or a terminal supervises it. Exit status:
 * 0 after SIGTERM/SIGINT or --check-config/--help, 2 for a configuration
 * error, 1 if it cannot start or its event loop fails. */
#include "config.h"
#include "log.h"
#include "server.h"

#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	char err[1024];
	struct config cfg;
	int rc = config_load(argc, argv, &cfg, err, sizeof(err));
	if (rc == CONFIG_EXIT)
		return 0;
	if (rc < 0) {
		fprintf(stderr, "feederd: %s\n", err);
		return 2;
	}
	if (cfg.check_only) {
		char why[512];
		if (config_metrics_exposed(cfg.metrics_listen, why, sizeof why))
			fprintf(stderr, "feederd: warning: %s\n", why);
		config_print(&cfg, stdout);
		return 0;
	}
	log_set_level(cfg.log_level);
	signal(SIGPIPE, SIG_IGN);
	struct server *srv;
	rc = server_create(&srv, &cfg, err, sizeof(err));
	if (rc) {
		log_err("cannot start: %s", err);
		return 1;
	}
	rc = server_run(srv, err, sizeof(err));
	if (rc)
		log_err("%s", err);
	server_destroy(srv);
	log_info("stopped");
	return rc ? 1 : 0;
}
