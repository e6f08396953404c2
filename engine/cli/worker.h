/* One `hookd run` process: the composition root. It owns the event loop,
 * the config snapshot, the Postgres pool, the Redis connections, the HTTP
 * listener and the roles, wires them together from one table (worker.c),
 * and runs the lifecycle: start (everything comes up even if Postgres or
 * Redis is down), SIGHUP reload (a bad file keeps the old config), SIGTERM
 * drain (stop claiming and accepting, finish what is in flight, remove the
 * heartbeat, exit 0). Roles see only the narrow context of ctx.h. */
#ifndef HOOKD_WORKER_H
#define HOOKD_WORKER_H

/* Runs a worker until SIGTERM/SIGINT; returns the process exit status. */
int worker_run(const char *config_path);

#endif
