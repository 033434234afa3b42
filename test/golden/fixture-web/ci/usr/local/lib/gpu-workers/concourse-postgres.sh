#!/usr/bin/env bash
# The Concourse web's database on this host's own PostgreSQL.
#   concourse-postgres.sh ensure --database NAME --user NAME --secrets-env FILE
#   concourse-postgres.sh remove --database NAME --user NAME [--keep]
# ensure installs PostgreSQL from the distribution when it is missing, starts it, and makes the
# role (password: CONCOURSE_POSTGRES_PASSWORD from FILE, the web's secret env file) and the
# database it owns; a changed password is set again. remove drops the database and the role,
# unless --keep (the data outlives the web).
set -euo pipefail

die() { echo "concourse-postgres: $*" >&2; exit 1; }
say() { echo "concourse-postgres: $*"; }

action=${1:-}; shift || true
database=""; user=""; secrets=""; keep=false
while [ $# -gt 0 ]; do
  case "$1" in
    --database) database=$2; shift 2 ;;
    --user) user=$2; shift 2 ;;
    --secrets-env) secrets=$2; shift 2 ;;
    --keep) keep=true; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done
if [ -z "$database" ] || [ -z "$user" ]; then die "--database and --user are required"; fi

# psql as the postgres superuser; SQL on stdin, values passed as psql variables (never spliced).
as_postgres() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }

# The password as a psql \set line, quoted for psql (a backslash and a quote escaped): it goes
# to psql on stdin, so no process's command line (what ps shows every user) ever holds it.
password_line() {
  local quoted=${1//\\/\\\\}
  quoted=${quoted//\'/\\\'}
  printf '\\set pw '"'"'%s'"'"'\n' "$quoted"
}

ensure_server() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and there is no apt-get to install it"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null ||
      die "could not install postgresql from the distribution's packages"
    say "installed postgresql"
  fi
  systemctl enable --now postgresql >/dev/null 2>&1 || die "could not start postgresql"
  local tries=0
  until runuser -u postgres -- psql -X -q -d postgres -c 'select 1' >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || die "postgresql did not accept connections within 60s"
    sleep 1
  done
}

ensure() {
  [ -r "$secrets" ] || die "--secrets-env FILE is required and must be readable"
  local password
  password=$(sed -n 's/^CONCOURSE_POSTGRES_PASSWORD=//p' "$secrets" | tail -n 1)
  [ -n "$password" ] || die "${secrets} has no CONCOURSE_POSTGRES_PASSWORD"
  ensure_server
  {
    password_line "$password"
    cat <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'role') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
ALTER ROLE :"role" WITH LOGIN PASSWORD :'pw';
SQL
  } | as_postgres -v role="$user"
  as_postgres -v role="$user" -v db="$database" <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role') WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
SQL
  say "database ${database} (owner ${user}) is ready"
}

remove() {
  if [ "$keep" = true ]; then
    say "keeping database ${database} and role ${user} (keepDatabase)"
    return 0
  fi
  command -v pg_ctlcluster >/dev/null 2>&1 || return 0
  systemctl is-active --quiet postgresql || return 0
  as_postgres -v role="$user" -v db="$database" >/dev/null <<'SQL'
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :'db';
SELECT format('DROP DATABASE %I', :'db') WHERE EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
SELECT format('DROP ROLE %I', :'role') WHERE EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
SQL
  say "dropped database ${database} and role ${user}"
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: concourse-postgres.sh ensure|remove ..." ;;
esac
