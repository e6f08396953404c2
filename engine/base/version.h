/* The hookd version, reported by `hookd --version`, the heartbeat, the
 * user-agent of deliveries and /metrics build info. */
#ifndef HOOKD_VERSION_H
#define HOOKD_VERSION_H
#define HOOKD_VERSION "0.2.0"
#endif
