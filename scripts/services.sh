#!/usr/bin/env bash
# Make sure the Postgres and Redis servers the tests talk to are up; start them if this machine has them.
set -uo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null || python3 -c 'import socket; socket.create_connection(("127.0.0.1", 5432), 2)' 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG || python3 -c 'import socket; socket.create_connection(("127.0.0.1", 6379), 2)' 2>/dev/null; }

if ! pg_up; then
  echo "Postgres is not answering on 127.0.0.1:5432; starting it"
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  for _ in $(seq 30); do pg_up && break; sleep 1; done
fi
if ! redis_up; then
  echo "Redis is not answering on 127.0.0.1:6379; starting it"
  if command -v redis-server >/dev/null; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
  for _ in $(seq 30); do redis_up && break; sleep 1; done
fi
pg_up || { echo "Postgres is still not reachable on 127.0.0.1:5432" >&2; exit 1; }
redis_up || { echo "Redis is still not reachable on 127.0.0.1:6379" >&2; exit 1; }
