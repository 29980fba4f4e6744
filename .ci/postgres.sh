#!/usr/bin/env bash
# Start a local PostgreSQL cluster for the test suite and make sure the test role and database
# exist. Idempotent: it works whether the cluster is missing, stopped or already running.
#
# Run as root (pg_ctlcluster/pg_createcluster switch to the postgres user themselves).
# Progress goes to stderr; the last thing printed on stdout is the URL for
# SPAMFILTER_TEST_POSTGRES_URL. Any failure exits non-zero with the server log tail.
#
# Overrides: PG_VERSION (default: the newest installed), PG_CLUSTER (main),
# PG_TEST_ROLE / PG_TEST_PASSWORD / PG_TEST_DATABASE (spamfilter / spamfilter / spamfilter_test).
set -euo pipefail

role="${PG_TEST_ROLE:-spamfilter}"
password="${PG_TEST_PASSWORD:-spamfilter}"
database="${PG_TEST_DATABASE:-spamfilter_test}"
cluster="${PG_CLUSTER:-main}"

say() { printf '[postgres] %s\n' "$*" >&2; }
die() { printf '[postgres] ERROR: %s\n' "$*" >&2; exit 1; }

[[ "$(id -u)" == 0 ]] || die "run as root (the cluster tools switch to the postgres user)"
command -v pg_lsclusters >/dev/null || die "postgresql-common is not installed (apt-get install postgresql)"

version="${PG_VERSION:-}"
if [[ -z "$version" ]]; then
    version="$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null \
        | sort -n | tail -n 1)"
fi
[[ -n "$version" && -x "/usr/lib/postgresql/$version/bin/postgres" ]] \
    || die "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)"

# pg_lsclusters -h: version cluster port status owner data-directory log-file
cluster_line() { pg_lsclusters -h 2>/dev/null | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c'; }

if [[ -z "$(cluster_line)" ]]; then
    say "creating cluster $version/$cluster"
    pg_createcluster --locale C.UTF-8 "$version" "$cluster" >&2 \
        || die "pg_createcluster $version $cluster failed"
fi

read -r _ _ port status _ _ logfile <<<"$(cluster_line)"
if [[ "$status" != online* ]]; then
    say "starting cluster $version/$cluster on port $port"
    if ! pg_ctlcluster "$version" "$cluster" start >&2; then
        tail -n 30 "$logfile" >&2 2>/dev/null || true
        die "pg_ctlcluster $version $cluster start failed"
    fi
else
    say "cluster $version/$cluster is already running on port $port"
fi

for _ in $(seq 1 60); do
    if pg_isready -q -h 127.0.0.1 -p "$port"; then
        break
    fi
    sleep 0.5
done
if ! pg_isready -q -h 127.0.0.1 -p "$port"; then
    tail -n 30 "$logfile" >&2 2>/dev/null || true
    die "PostgreSQL is not accepting connections on 127.0.0.1:$port"
fi

as_postgres() { (cd / && runuser -u postgres -- "$@"); }

say "ensuring role $role and database $database (owned by the role: tests create schemas in it)"
as_postgres psql -p "$port" -X -q -v ON_ERROR_STOP=1 -v role="$role" -v password="$password" \
    -v database="$database" >&2 <<'SQL'
SELECT format('CREATE ROLE %I', :'role')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', :'role', :'password') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'database', :'role')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'database') \gexec
SELECT format('GRANT CREATE, CONNECT ON DATABASE %I TO %I', :'database', :'role') \gexec
SQL

url="postgresql://$role:$password@127.0.0.1:$port/$database"
PGPASSWORD="$password" psql -X -q -h 127.0.0.1 -p "$port" -U "$role" -d "$database" \
    -c 'SELECT 1' >/dev/null || die "cannot log in as $role over TCP on 127.0.0.1:$port"
say "ready: postgresql://$role:***@127.0.0.1:$port/$database"
printf '%s\n' "$url"
