#!/usr/bin/env bash
# cluster.sh — the cluster shape from local processes on 127.0.0.1, no Docker:
# one bin/mesos-local (master+agent) and SCHEDULERS schedulers on consecutive
# ports with --mesos-url = mesos-local, and their registry:
#   REGISTRY=zookeeper (default): a 3-server ZooKeeper ensemble and MariaDB
#     (scripts/services.sh); --zk-servers = the ensemble, the event trace in MariaDB.
#   REGISTRY=etcd: nothing else; each scheduler runs an etcd member of its own
#     (--registry etcd, a static peer list of them all) in its data directory, and
#     keeps the whole history in its own SQLite, replicated through etcd.
# Everything lives under DIR.
#
#   scripts/cluster.sh up DIR       start what is not running, wait for /healthz, print the URLs
#   scripts/cluster.sh status DIR   each process (running/stopped) and who leads
#   scripts/cluster.sh down DIR     stop everything (SIGTERM, SIGKILL after 20 s); idempotent
#
# Environment, read by up (else what the last up in DIR used, else the default;
# status and down act on what up started):
#   SCHEDULERS=3          how many schedulers (1..9)
#   REGISTRY=zookeeper    zookeeper or etcd
#   ETCD_PORT=2379        REGISTRY=etcd: scheduler N's member serves clients on
#                         ETCD_PORT+2(N-1) and its peers on the port after
#   BASE_PORT=8899        API port of the first scheduler; the others follow
#   MESOS_PORT=5050       mesos-local's port
#   BIN_DIR=REPO/bin      scheduler, executor and mesos-local (built with make build if missing)
#   SCHEDULER_ARGS=       more flags for every scheduler (word-split), e.g. auth settings
#   CLUSTER_AUTH=         user:password for status's API call when auth is on
# Layout: DIR/services (ZooKeeper, MariaDB), DIR/mesos-local (sandboxes),
# DIR/scheduler-N/data, DIR/logs/*.log, DIR/run/*.pid, DIR/cluster.env.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=services.sh
. "$REPO/scripts/services.sh"

cdie() { echo "cluster.sh: $*" >&2; exit 1; }

# http_get PORT PATH: the body of GET http://127.0.0.1:PORT/PATH; fails
# unless it answers 200. Plain bash, so a fresh machine needs no curl.
http_get() {
	local port=$1 path=$2 status auth=""
	[[ -z ${CLUSTER_AUTH:-} ]] || auth="Authorization: Basic $(printf %s "$CLUSTER_AUTH" | base64 -w0)"$'\r\n'
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n%s\r\n' "$path" "$port" "$auth" >&3
	IFS= read -r -t 5 status <&3 || { exec 3<&- 3>&-; return 1; }
	if [[ $status != *" 200 "* ]]; then exec 3<&- 3>&-; return 1; fi
	timeout 5 sed '1,/^\r\{0,1\}$/d' <&3 || true
	exec 3<&- 3>&-
}

healthy() { http_get "$1" "$2" >/dev/null 2>&1; }

count_arg() {
	if ! [[ $2 =~ ^[1-9][0-9]*$ ]] || (($2 < $3 || $2 > $4)); then cdie "$1=$2: want a number from $3 to $4"; fi
}

# settings DIR [up]: the shape of the cluster in DIR. status and down read
# DIR/cluster.conf (what up last used); up takes the environment, else that
# file, else the defaults, and records what it uses.
settings() {
	local dir=$1 conf_s="" conf_b="" conf_m="" conf_r="" conf_e=""
	if [[ -s $dir/cluster.conf ]]; then
		conf_s=$(sed -n 's/^SCHEDULERS=//p' "$dir/cluster.conf")
		conf_b=$(sed -n 's/^BASE_PORT=//p' "$dir/cluster.conf")
		conf_m=$(sed -n 's/^MESOS_PORT=//p' "$dir/cluster.conf")
		conf_r=$(sed -n 's/^REGISTRY=//p' "$dir/cluster.conf")
		conf_e=$(sed -n 's/^ETCD_PORT=//p' "$dir/cluster.conf")
	fi
	if [[ ${2:-} == up ]]; then
		SCHEDULERS=${SCHEDULERS:-${conf_s:-3}}
		BASE_PORT=${BASE_PORT:-${conf_b:-8899}}
		MESOS_PORT=${MESOS_PORT:-${conf_m:-5050}}
		REGISTRY=${REGISTRY:-${conf_r:-zookeeper}}
		ETCD_PORT=${ETCD_PORT:-${conf_e:-2379}}
	else
		SCHEDULERS=$conf_s BASE_PORT=$conf_b MESOS_PORT=$conf_m REGISTRY=${conf_r:-zookeeper} ETCD_PORT=${conf_e:-2379}
	fi
	count_arg SCHEDULERS "$SCHEDULERS" 1 9
	count_arg BASE_PORT "$BASE_PORT" 1 $((65535 - SCHEDULERS + 1))
	count_arg MESOS_PORT "$MESOS_PORT" 1 65535
	count_arg ETCD_PORT "$ETCD_PORT" 1 $((65535 - 2 * SCHEDULERS + 1))
	[[ $REGISTRY == zookeeper || $REGISTRY == etcd ]] || cdie "REGISTRY=$REGISTRY: want zookeeper or etcd"
	[[ ${2:-} == up ]] || return 0
	if [[ -n $conf_s && "$SCHEDULERS $BASE_PORT $MESOS_PORT $REGISTRY $ETCD_PORT" != "$conf_s $conf_b $conf_m ${conf_r:-zookeeper} ${conf_e:-2379}" ]] && anything_runs "$dir"; then
		cdie "the cluster in $dir runs with SCHEDULERS=$conf_s BASE_PORT=$conf_b MESOS_PORT=$conf_m REGISTRY=${conf_r:-zookeeper} ETCD_PORT=${conf_e:-2379}; run down first to change it"
	fi
	printf 'SCHEDULERS=%s\nBASE_PORT=%s\nMESOS_PORT=%s\nREGISTRY=%s\nETCD_PORT=%s\n' \
		"$SCHEDULERS" "$BASE_PORT" "$MESOS_PORT" "$REGISTRY" "$ETCD_PORT" >"$dir/cluster.conf"
}

# etcd_client_port N, etcd_peer_port N: scheduler N's member's ports.
etcd_client_port() { echo $((ETCD_PORT + 2 * ($1 - 1))); }
etcd_peer_port() { echo $((ETCD_PORT + 2 * ($1 - 1) + 1)); }

# etcd_peers: the static peer list of every scheduler's member.
etcd_peers() {
	local n peers=""
	for n in $(seq 1 "$SCHEDULERS"); do peers+="${peers:+,}s$n=http://127.0.0.1:$(etcd_peer_port "$n")"; done
	echo "$peers"
}

anything_runs() {
	local f
	for f in "$1"/run/*.pid; do
		[[ -s $f ]] && [[ -r /proc/$(<"$f")/cmdline ]] && return 0
	done
	return 1
}

build() {
	BIN_DIR=${BIN_DIR:-$REPO/bin}
	local b missing=""
	for b in scheduler executor mesos-local; do [[ -x $BIN_DIR/$b ]] || missing+=" $b"; done
	[[ -z $missing ]] && return 0
	[[ $BIN_DIR == "$REPO/bin" ]] || cdie "BIN_DIR=$BIN_DIR lacks$missing"
	echo "cluster.sh: building$missing (make build)" >&2
	PATH=/usr/local/go/bin:$PATH make -s -C "$REPO" build >&2 || cdie "make build failed"
}

need_services() {
	local b
	for b in java mariadbd mariadb-install-db mariadb-admin; do
		command -v "$b" >/dev/null 2>&1 || cdie "$b is missing: run 'sudo SKIP_BROWSER=1 scripts/services.sh install' first"
	done
	[[ -f /usr/share/java/zookeeper.jar ]] || cdie "ZooKeeper is missing: run 'sudo SKIP_BROWSER=1 scripts/services.sh install' first"
}


# ---------------------------------------------------------------- processes

sched_data() { echo "$1/scheduler-$2/data"; }

start_mesos_local() {
	local dir=$1 pidf=$1/run/mesos-local.pid
	alive "$pidf" "$dir/mesos-local" && return 0
	port_in_use "$MESOS_PORT" && cdie "port $MESOS_PORT (mesos-local) is taken by another process; set MESOS_PORT"
	# The framework secret the schedulers present (tasks hold none: docs/tenancy.md).
	if [[ ! -s $dir/run/mesos-secret ]]; then
		(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$dir/run/mesos-secret") || cdie "cannot write $dir/run/mesos-secret"
	fi
	# shellcheck disable=SC2086 # MESOS_ARGS is a list of flags
	spawn "$pidf" "$dir/logs/mesos-local.log" "$BIN_DIR/mesos-local" --port "$MESOS_PORT" \
		--work-dir "$dir/mesos-local" --secret-file "$dir/run/mesos-secret" ${MESOS_ARGS:-}
	wait_until mesos-local "$pidf" "$dir/mesos-local" "$dir/logs/mesos-local.log" healthy "$MESOS_PORT" /health
}

# spawn_scheduler DIR N: start scheduler N unless it runs; no wait.
spawn_scheduler() {
	local dir=$1 n=$2 port data pidf zk dsn
	port=$((BASE_PORT + n - 1))
	data=$(sched_data "$dir" "$n")
	pidf=$dir/run/scheduler-$n.pid
	alive "$pidf" "$data" && return 0
	port_in_use "$port" && cdie "port $port (scheduler $n) is taken by another process; set BASE_PORT"
	mkdir -p "$data"
	if [[ $REGISTRY == etcd ]]; then
		spawn_etcd_scheduler "$dir" "$n" "$port" "$data" "$pidf"
		return
	fi
	zk=$(sed -n 's/^export EJ_TEST_ZK_ENSEMBLE=//p' "$dir/services/ensemble.env")
	dsn="$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$(<"$dir/services/mysql.port"))/$MYSQL_DB?parseTime=true"
	# The DSN and the Mesos secret go through the environment, not the command line (ps shows that).
	# shellcheck disable=SC2086 # SCHEDULER_ARGS is a list of flags
	(
		export ELASTICJOB_EVENT_TRACE_RDB_URL=$dsn
		export ELASTICJOB_MESOS_PRINCIPAL=elasticjob ELASTICJOB_MESOS_SECRET
		ELASTICJOB_MESOS_SECRET=$(<"$dir/run/mesos-secret")
		spawn "$pidf" "$dir/logs/scheduler-$n.log" "$BIN_DIR/scheduler" --data-dir "$data" \
			--http-port "$port" --zk-servers "$zk" --mesos-url "http://127.0.0.1:$MESOS_PORT" \
			--event-trace-rdb-driver mysql --executor-cache-dir "$dir/app-cache" \
			--executor-path "$BIN_DIR/executor" --allow-file-app-urls=true ${SCHEDULER_ARGS:-}
	) || exit 1
}

# spawn_etcd_scheduler DIR N PORT DATA PIDFILE: scheduler N with a member of
# the etcd cluster of them all in DATA/etcd; its copy of the replicated history
# in DATA/trace.db.
spawn_etcd_scheduler() {
	local dir=$1 n=$2 port=$3 data=$4 pidf=$5 cport pport
	cport=$(etcd_client_port "$n")
	pport=$(etcd_peer_port "$n")
	if [[ ! -d $data/etcd ]]; then # a member that has run holds its ports itself (a restart)
		port_in_use "$cport" && cdie "port $cport (scheduler $n's etcd clients) is taken by another process; set ETCD_PORT"
		port_in_use "$pport" && cdie "port $pport (scheduler $n's etcd peers) is taken by another process; set ETCD_PORT"
	fi
	# shellcheck disable=SC2086 # SCHEDULER_ARGS is a list of flags
	(
		export ELASTICJOB_MESOS_PRINCIPAL=elasticjob ELASTICJOB_MESOS_SECRET
		ELASTICJOB_MESOS_SECRET=$(<"$dir/run/mesos-secret")
		spawn "$pidf" "$dir/logs/scheduler-$n.log" "$BIN_DIR/scheduler" --data-dir "$data" \
			--http-port "$port" --registry etcd --etcd-name "s$n" --etcd-peers "$(etcd_peers)" \
			--etcd-client-url "http://127.0.0.1:$cport" --mesos-url "http://127.0.0.1:$MESOS_PORT" \
			--executor-cache-dir "$dir/app-cache" \
			--executor-path "$BIN_DIR/executor" --allow-file-app-urls=true ${SCHEDULER_ARGS:-}
	) || exit 1
}

cluster_up() {
	local dir=$1 n
	settings "$dir" up
	build
	if [[ $REGISTRY == zookeeper ]]; then
		need_services
		echo "cluster.sh: ZooKeeper ensemble and MariaDB" >&2
		mkdir -p "$dir/services"
		cmd_start_ensemble "$dir/services"
		cmd_start_mysql "$dir/services"
	fi
	echo "cluster.sh: mesos-local on port $MESOS_PORT" >&2
	start_mesos_local "$dir"
	echo "cluster.sh: $SCHEDULERS scheduler(s) from port $BASE_PORT" >&2
	for n in $(seq 1 "$SCHEDULERS"); do spawn_scheduler "$dir" "$n"; done
	for n in $(seq 1 "$SCHEDULERS"); do
		wait_until "scheduler $n" "$dir/run/scheduler-$n.pid" "$(sched_data "$dir" "$n")" \
			"$dir/logs/scheduler-$n.log" healthy $((BASE_PORT + n - 1)) /healthz
	done
	write_cluster_env "$dir"
	echo "mesos-local: http://127.0.0.1:$MESOS_PORT"
	if [[ $REGISTRY == etcd ]]; then
		echo "etcd: $(etcd_peers)"
	else
		echo "zookeeper: $(sed -n 's/^export EJ_TEST_ZK_ENSEMBLE=//p' "$dir/services/ensemble.env")"
	fi
	for n in $(seq 1 "$SCHEDULERS"); do echo "scheduler $n: http://127.0.0.1:$((BASE_PORT + n - 1))"; done
	if [[ $REGISTRY == etcd ]]; then
		echo "logs: $dir/logs"
	else
		echo "logs: $dir/logs (ZooKeeper, MariaDB: $dir/services)"
	fi
}

write_cluster_env() {
	local dir=$1 n urls=""
	for n in $(seq 1 "$SCHEDULERS"); do urls+="${urls:+ }http://127.0.0.1:$((BASE_PORT + n - 1))"; done
	{
		echo "export CLUSTER_SCHEDULER_URLS='$urls'"
		echo "export CLUSTER_MESOS_URL=http://127.0.0.1:$MESOS_PORT"
		echo "export CLUSTER_REGISTRY=$REGISTRY"
		if [[ $REGISTRY == etcd ]]; then
			local eps=""
			for n in $(seq 1 "$SCHEDULERS"); do eps+="${eps:+,}http://127.0.0.1:$(etcd_client_port "$n")"; done
			echo "export CLUSTER_ETCD_ENDPOINTS=$eps"
		else
			sed -n 's/^export EJ_TEST_ZK_ENSEMBLE=/export CLUSTER_ZK_SERVERS=/p' "$dir/services/ensemble.env"
		fi
	} >"$dir/cluster.env"
}

# leader_of PORT prints the "leader" field of GET /api/operate/cluster.
leader_of() {
	local body
	body=$(http_get "$1" /api/operate/cluster 2>/dev/null) || { echo "cluster view unavailable"; return; }
	grep -oE '"leader":(\{[^}]*\}|"[^"]*"|null)' <<<"$body" | head -n 1 || echo "no leader field"
}

cluster_status() {
	local dir=$1 rc=0 n port pidf
	[[ -s $dir/cluster.conf ]] || { echo "no cluster in $dir (run: $0 up $dir)"; return 1; }
	settings "$dir"
	if [[ $REGISTRY == zookeeper ]]; then
		cmd_status_ensemble "$dir/services" || rc=1
		if alive "$dir/services/mysql.pid" "$dir/services/mysql.sock"; then
			echo "mariadb: running, pid $(<"$dir/services/mysql.pid"), port $(<"$dir/services/mysql.port")"
		else echo "mariadb: stopped"; rc=1; fi
	fi
	if alive "$dir/run/mesos-local.pid" "$dir/mesos-local"; then
		echo "mesos-local: running, pid $(<"$dir/run/mesos-local.pid"), http://127.0.0.1:$MESOS_PORT"
	else echo "mesos-local: stopped"; rc=1; fi
	for n in $(seq 1 "$SCHEDULERS"); do
		port=$((BASE_PORT + n - 1))
		pidf=$dir/run/scheduler-$n.pid
		if alive "$pidf" "$(sched_data "$dir" "$n")"; then
			echo "scheduler $n: running, pid $(<"$pidf"), http://127.0.0.1:$port, $(leader_of "$port")"
		else echo "scheduler $n: stopped"; rc=1; fi
	done
	return $rc
}

# cleanup_mesos_local DIR: the executors and tasks a stopped mesos-local
# left running (they outlive it, for its next start to take over) are shut
# down by mesos-local --recover=cleanup.
cleanup_mesos_local() {
	local dir=$1 port bin=${BIN_DIR:-$REPO/bin}/mesos-local
	[[ -d $dir/mesos-local && -x $bin ]] || return 0
	port=$(sed -n 's/^MESOS_PORT=//p' "$dir/cluster.conf" 2>/dev/null)
	local secret=()
	[[ -s $dir/run/mesos-secret ]] && secret=(--secret-file "$dir/run/mesos-secret")
	"$bin" --recover=cleanup --work-dir "$dir/mesos-local" --port "${port:-5050}" "${secret[@]}" >>"$dir/logs/mesos-local.log" 2>&1 ||
		echo "cluster.sh: mesos-local --recover=cleanup failed (see $dir/logs/mesos-local.log)" >&2
}

cluster_down() {
	local dir=$1 f n pids=()
	for f in "$dir"/run/scheduler-*.pid; do
		[[ -e $f ]] || continue
		n=${f##*/scheduler-}
		n=${n%.pid}
		stop_pid "scheduler $n" "$f" "$(sched_data "$dir" "$n")" &
		pids+=($!)
	done
	for f in "${pids[@]}"; do wait "$f" || true; done
	stop_pid mesos-local "$dir/run/mesos-local.pid" "$dir/mesos-local"
	cleanup_mesos_local "$dir"
	if [[ -d $dir/services ]]; then
		cmd_stop_mysql "$dir/services"
		cmd_stop_ensemble "$dir/services"
	fi
}

main() {
	local cmd=${1:-} dir
	case $cmd in
	up | down | status) ;;
	*) cdie "usage: $0 up|down|status DIR (SCHEDULERS, REGISTRY, BASE_PORT, MESOS_PORT, ETCD_PORT, BIN_DIR, SCHEDULER_ARGS from the environment)" ;;
	esac
	[[ -n ${2:-} ]] || cdie "missing DIR argument"
	dir=$(abs_dir "$2")
	mkdir -p "$dir/run" "$dir/logs"
	case $cmd in
	up) cluster_up "$dir" ;;
	down) cluster_down "$dir" ;;
	status) cluster_status "$dir" ;;
	esac
}

main "$@"
