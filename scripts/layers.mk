# The source folders' layers and the domains' include rules: one table,
# read by the Makefile (each folder's include paths) and by
# scripts/check_layers.py (includes and calls between modules).
#
# Floors, bottom to top: a folder may use its own floor and those below.
FLOORS  := engine/base engine/io engine/core schedulers engine/shared
# Domains sit on the floors, side by side. A domain's own headers are
# internal to it; engine/D/D.h is its public header, the only one another
# domain (or engine/cli) may include, and only when the table allows it.
DOMAINS := inbound outbound api portal ops
# DOMAIN_USES_D: the domains whose public header D may include and call.
# Inbound routes hand events to outbound; the portal drives the API's
# operations; operations read every domain.
DOMAIN_USES_inbound  := outbound
DOMAIN_USES_outbound :=
DOMAIN_USES_api      :=
DOMAIN_USES_portal   := api
DOMAIN_USES_ops      := inbound outbound api portal
# The top: the CLI and the worker, which start every domain.
TOP     := engine/cli
