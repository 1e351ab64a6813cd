#!/bin/sh
# Prepares a host for the systemd units beside this file (keyforge-server@.service, keyforge-worker.service): the
# `keyforge` system user they run as, the code in /opt/keyforge (owned by root, read-only to the service), the data
# directory /var/lib/keyforge, and /etc/keyforge/env (root:keyforge, 0640) from env.example with a new SERVER_SECRET.
# An existing /etc/keyforge/env is left as it is. Run as root from a built checkout:
#   pnpm install --frozen-lockfile && pnpm build
#   sudo sh server/deploy/install.sh
# then edit /etc/keyforge/env, run the migrations as the owner role (docs/operate/upgrades.md), and
#   sudo systemctl daemon-reload && sudo systemctl enable --now keyforge-server@4000 keyforge-worker
set -eu
SOURCE=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -f "$SOURCE/server/dist/main.js" ] && [ -f "$SOURCE/server/dist/worker.js" ] || {
  echo "install.sh: build first in $SOURCE: pnpm install --frozen-lockfile && pnpm build" >&2; exit 1; }

# The service user: a system account without a login shell.
id -u keyforge >/dev/null 2>&1 || useradd --system --user-group --home-dir /var/lib/keyforge --no-create-home --shell /usr/sbin/nologin keyforge

# The code, as built (node_modules included: pnpm's links are relative); not the checkout's data or history.
if [ "$SOURCE" != /opt/keyforge ]; then
  install -d -o root -g root -m 0755 /opt/keyforge
  tar -C "$SOURCE" --exclude=./.git --exclude=./data --exclude=./test-output -cf - . | tar -C /opt/keyforge --no-same-owner -xf -
fi

# DATA_DIR: written by the service only.
install -d -o keyforge -g keyforge -m 0700 /var/lib/keyforge

# The environment: secrets inside, so readable by root and the service's group only.
install -d -o root -g root -m 0755 /etc/keyforge
if [ ! -e /etc/keyforge/env ]; then
  secret=$(openssl rand -base64 48)
  sed "s|^SERVER_SECRET=.*|SERVER_SECRET=$secret|" "$SOURCE/server/deploy/env.example" > /etc/keyforge/env.new
  chown root:keyforge /etc/keyforge/env.new
  chmod 0640 /etc/keyforge/env.new
  mv /etc/keyforge/env.new /etc/keyforge/env
  echo "install.sh: wrote /etc/keyforge/env with a new SERVER_SECRET; edit its URLs (on more hosts, copy this file instead)"
fi

install -m 0644 "$SOURCE/server/deploy/keyforge-server@.service" "$SOURCE/server/deploy/keyforge-worker.service" /etc/systemd/system/
echo "install.sh: done; next: systemctl daemon-reload && systemctl enable --now keyforge-server@4000 keyforge-worker"
