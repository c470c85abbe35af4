#!/usr/bin/env bash
# services.sh — install, start and stop the real ZooKeeper and MariaDB that the
# integration tests use. Everything listens on 127.0.0.1 only, on free ports
# picked at start time, with all state under one directory.
#
#   scripts/services.sh install            apt-get what the tests need (idempotent;
#                                          SKIP_BROWSER=1 leaves out chromium;
#                                          prometheus brings promtool;
#                                          openjdk-17-jdk-headless the JVM tests)
#   scripts/services.sh start DIR          start ZooKeeper and MariaDB, write DIR/env
#   scripts/services.sh stop DIR           stop both (data is kept)
#   scripts/services.sh start-zk|stop-zk|restart-zk DIR
#   scripts/services.sh start-mysql|stop-mysql|restart-mysql DIR
#   scripts/services.sh status DIR
#   scripts/services.sh start-ensemble|stop-ensemble|status-ensemble DIR
#                                          a 3-server ZooKeeper quorum, write DIR/ensemble.env
#   scripts/services.sh stop-zk-node|kill-zk-node|start-zk-node DIR N
#                                          one ensemble server (N = 1..3); kill = SIGKILL
#
# After start, `. DIR/env` exports:
#   EJ_TEST_ZK               127.0.0.1:PORT
#   EJ_TEST_MYSQL_DSN        ejtest:…@tcp(127.0.0.1:PORT)/elasticjob_test?parseTime=true
#   EJ_TEST_MYSQL_ADMIN_DSN  root:…@tcp(127.0.0.1:PORT)/?parseTime=true
#   EJ_TEST_SERVICES_DIR     DIR
#   EJ_TEST_SERVICES_SCRIPT  absolute path of this script (tests call stop-zk etc.)
# After start-ensemble, `. DIR/ensemble.env` exports:
#   EJ_TEST_ZK_ENSEMBLE      127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#   EJ_TEST_ZK_NODE_1..3     127.0.0.1:Pn (client port of server n)
#   EJ_TEST_ZK_ENSEMBLE_DIR  DIR (for stop-zk-node etc.)
# A restarted service comes back on the same port with the same data.
# EJ_ZK_HEAP sets the Java heap of the single ZooKeeper server (default 256m,
# what the tests need) and of each ensemble server (default 128m); the
# 100,000-job simulated cluster needs about 1g: ZooKeeper holds its whole
# tree in memory.
# Quiet on success; on failure it prints the tail of the service's log.
set -euo pipefail

SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
WAIT_SECS=${EJ_SERVICES_WAIT_SECS:-60}  # bound on each readiness wait
STOP_SECS=${EJ_SERVICES_STOP_SECS:-20}  # SIGTERM grace before SIGKILL

# Test-only credentials for a loopback server that lives in a scratch directory.
MYSQL_USER=ejtest
MYSQL_PASS=ejtest_pw
MYSQL_ROOT_PASS=root_pw
MYSQL_DB=elasticjob_test

die() { echo "services.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- install

zk_classpath() {
	# Debian's zookeeper.jar carries a Class-Path manifest naming its other
	# jars (jute, netty, commons-*, metrics, jackson, jetty); only the slf4j
	# backend has to be added (slf4j-simple: logs to stderr → DIR/zk.log).
	printf '%s\n' /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
}

have_all() {
	local b
	for b in java javac jar mariadbd mariadb-install-db mariadb-admin mariadb xz bzip2 promtool curl htpasswd; do
		command -v "$b" >/dev/null 2>&1 || return 1
	done
	[[ -f /usr/share/java/zookeeper.jar && -f /usr/share/java/slf4j-simple.jar && -f /usr/share/java/spring3-context.jar ]] || return 1
	if [[ -z "${SKIP_BROWSER:-}" ]]; then
		command -v chromium >/dev/null 2>&1 || return 1
	fi
}

cmd_install() {
	[[ $(id -u) -eq 0 ]] || die "install needs root"
	have_all && return 0
	# prometheus: for promtool, which checks and unit-tests deploy/prometheus/alerts.yml
	# (Debian ships it only in this package: 19 MB, 96 MB installed; its daemon is not started).
	# curl: the README walk-through's commands, run as written by e2e/walkthrough_test.go.
	# openjdk-17-jdk-headless: the Java library (sdk/java) and the Java jobs' tests on a real JVM;
	# libspring-context-java: a 2.x job that is a Spring bean (beanName, applicationContext).
	# apache2-utils: htpasswd, which the tenancy tests use to write a users file as an operator would.
	local pkgs=(zookeeper libslf4j-java mariadb-server mariadb-client xz-utils bzip2 prometheus curl
		openjdk-17-jdk-headless libspring-context-java apache2-utils)
	[[ -n "${SKIP_BROWSER:-}" ]] || pkgs+=(chromium fonts-liberation)
	# Keep package scripts from starting system daemons (we run our own).
	local policy=/usr/sbin/policy-rc.d made_policy=""
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
	fi
	local log rc=0
	log=$(mktemp /tmp/services-install.XXXXXX.log)
	{
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q &&
			apt-get install -y -q --no-install-recommends "${pkgs[@]}"
	} >"$log" 2>&1 || rc=$?
	[[ -z $made_policy ]] || rm -f "$policy"
	if [[ $rc -ne 0 ]]; then
		tail -n 40 "$log" >&2
		die "apt-get failed (exit $rc); full log: $log"
	fi
	rm -f "$log"
	have_all || die "install finished but some tool is still missing"
}

# ---------------------------------------------------------------- helpers

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_bound PORT: any socket has PORT as its local port (a listener, or a
# client's connection, or one in TIME-WAIT: ZooKeeper's quorum listeners
# cannot bind over those).
port_bound() {
	command -v ss >/dev/null || return 1
	[[ -n $(ss -Htan "( sport = :$1 )" 2>/dev/null) ]]
}

# free_port picks below the kernel's ephemeral range (32768 by default), so
# the many short client connections of a test run never take a server's port
# between the pick and the bind.
free_port() {
	local p eph lo=20000 hi=32768
	read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && ((eph > lo + 1000)) && hi=$eph
	for _ in $(seq 1 200); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo)))
		port_in_use "$p" || port_bound "$p" || { echo "$p"; return 0; }
	done
	die "no free port found"
}

# alive PIDFILE MARKER: the pid in PIDFILE runs and its command line holds MARKER
# (guards against a recycled pid). A process caught inside execve, or one the
# kernel has not yet given its new arguments, reads an empty command line:
# that one is alive unless it is a zombie, else a service seen a moment after
# spawn could be reported dead while it starts.
alive() {
	local pid cmd state
	[[ -s $1 ]] || return 1
	pid=$(<"$1")
	[[ -r /proc/$pid/cmdline ]] || return 1
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	if [[ -z $cmd ]]; then
		state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
		[[ -n $state && $state != Z && $state != X ]]
		return
	fi
	[[ $cmd == *"$2"* ]]
}

# spawn PIDFILE LOG CMD...: run CMD detached in its own session, pid recorded.
# SPAWNED[PIDFILE] keeps the shell's child, so wait_until can tell how it ended.
declare -A SPAWNED=()
spawn() {
	local pidfile=$1 log=$2
	shift 2
	# shellcheck disable=SC2016
	setsid sh -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" </dev/null >>"$log" 2>&1 &
	SPAWNED[$pidfile]=$!
	for _ in $(seq 1 50); do [[ -s $pidfile ]] && return 0; sleep 0.1; done
	die "could not start $1"
}

# stop_pid NAME PIDFILE MARKER: SIGTERM, then SIGKILL after STOP_SECS.
stop_pid() {
	local name=$1 pidfile=$2 marker=$3 pid
	if ! alive "$pidfile" "$marker"; then rm -f "$pidfile"; return 0; fi
	pid=$(<"$pidfile")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 $((STOP_SECS * 10))); do
		alive "$pidfile" "$marker" || { rm -f "$pidfile"; return 0; }
		sleep 0.1
	done
	echo "services.sh: $name (pid $pid) ignored SIGTERM for ${STOP_SECS}s; killing" >&2
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		alive "$pidfile" "$marker" || break
		sleep 0.1
	done
	rm -f "$pidfile"
}

fail_log() { # fail_log NAME LOG MESSAGE
	echo "services.sh: $1: $3; last lines of $2:" >&2
	tail -n 30 "$2" >&2 || true
	exit 1
}

# await PIDFILE MARKER CHECK...: poll CHECK until it succeeds (0); 1 when the
# process died first (AWAIT_HOW says how it ended), 2 after WAIT_SECS.
await() {
	local pidfile=$1 marker=$2 bg st
	shift 2
	AWAIT_HOW=
	for _ in $(seq 1 $((WAIT_SECS * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		if ! alive "$pidfile" "$marker"; then
			AWAIT_HOW="process exited"
			bg=${SPAWNED[$pidfile]:-}
			if [[ -n $bg ]]; then
				st=0
				wait "$bg" 2>/dev/null || st=$?
				if ((st > 128)); then AWAIT_HOW="process killed by signal $((st - 128))"
				else AWAIT_HOW="process exited with status $st"; fi
			fi
			return 1
		fi
		sleep 0.2
	done
	AWAIT_HOW="not ready after ${WAIT_SECS}s"
	return 2
}

# wait_until NAME PIDFILE MARKER LOG CHECK...: await, failing with LOG's tail.
wait_until() {
	local name=$1 pidfile=$2 marker=$3 log=$4
	shift 4
	await "$pidfile" "$marker" "$@" || fail_log "$name" "$log" "$AWAIT_HOW"
}

abs_dir() {
	[[ -n ${1:-} ]] || die "missing DIR argument"
	mkdir -p "$1"
	(cd "$1" && pwd)
}

# ---------------------------------------------------------------- zookeeper

zk_ruok() {
	local reply=""
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'ruok' >&3
	read -r -t 2 reply <&3 || true
	exec 3<&- 3>&-
	[[ $reply == imok ]]
}

cmd_start_zk() {
	local dir=$1 port
	if alive "$dir/zk.pid" "$dir/zk/zoo.cfg"; then return 0; fi
	mkdir -p "$dir/zk/data"
	if [[ -s $dir/zk.port ]]; then
		port=$(<"$dir/zk.port")
	else
		port=$(free_port)
		echo "$port" >"$dir/zk.port"
	fi
	port_in_use "$port" && die "zookeeper port $port is taken by another process"
	# tickTime 500 lets tests use short sessions (min 1s); forceSync=no: test
	# data survives a process kill, not a machine crash.
	cat >"$dir/zk/zoo.cfg" <<CFG
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/zk/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,conf
forceSync=no
CFG
	# A JVM that dies while it starts, before it has printed a line, is taken
	# for a passing fault of the machine and started again (three tries); one
	# that printed why it stopped, or never answers, fails at once.
	local try rc
	for try in 1 2 3; do
		rm -f "$dir/zk.pid"
		spawn "$dir/zk.pid" "$dir/zk.log" java -Xmx"${EJ_ZK_HEAP:-256m}" -XX:+UseSerialGC \
			-XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false -Djute.maxbuffer=8388608 \
			-cp "$(zk_classpath)" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zk/zoo.cfg"
		rc=0
		await "$dir/zk.pid" "$dir/zk/zoo.cfg" zk_ruok "$port" || rc=$?
		((rc == 0)) && return 0
		if ((rc != 1 || try == 3)) || [[ -s $dir/zk.log ]]; then
			fail_log zookeeper "$dir/zk.log" "$AWAIT_HOW (try $try)"
		fi
		echo "services.sh: zookeeper: $AWAIT_HOW before printing anything (try $try); starting it again" >&2
	done
}

cmd_stop_zk() { stop_pid zookeeper "$1/zk.pid" "$1/zk/zoo.cfg"; }

# ---------------------------------------------------------------- zookeeper ensemble

# shellcheck source-path=SCRIPTDIR source=zk-ensemble.sh
. "$(dirname "$SCRIPT")/zk-ensemble.sh"

# ---------------------------------------------------------------- mariadb

mysql_root() { mariadb --no-defaults --socket="$1/mysql.sock" -uroot "${@:2}"; }

cmd_start_mysql() {
	local dir=$1 port fresh=""
	if alive "$dir/mysql.pid" "$dir/mysql.sock"; then return 0; fi
	if [[ -s $dir/mysql.port ]]; then
		port=$(<"$dir/mysql.port")
	else
		port=$(free_port)
		echo "$port" >"$dir/mysql.port"
	fi
	port_in_use "$port" && die "mariadb port $port is taken by another process"
	(( ${#dir} < 90 )) || die "DIR is too long for a unix socket path: $dir"
	if [[ ! -d $dir/mysql/mysql ]]; then
		rm -rf "$dir/mysql"
		mariadb-install-db --no-defaults --datadir="$dir/mysql" --user=root \
			--auth-root-authentication-method=normal --skip-test-db \
			>"$dir/mysql-install.log" 2>&1 ||
			fail_log mariadb-install-db "$dir/mysql-install.log" "failed"
		fresh=1
	fi
	mkdir -p "$dir/mysql-tmp"
	rm -f "$dir/mysql.pid"
	spawn "$dir/mysql.pid" "$dir/mysql.log" mariadbd --no-defaults \
		--datadir="$dir/mysql" --user=root --bind-address=127.0.0.1 --port="$port" \
		--socket="$dir/mysql.sock" --pid-file="$dir/mysql/mariadbd.pid" \
		--tmpdir="$dir/mysql-tmp" --skip-name-resolve --max-connections=500 \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
		--innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
		--log-error="$dir/mysql.log"
	wait_until mariadb "$dir/mysql.pid" "$dir/mysql.sock" "$dir/mysql.log" \
		mariadb-admin --no-defaults --socket="$dir/mysql.sock" -uroot \
		--password="$MYSQL_ROOT_PASS" ping
	if [[ -n $fresh ]] || ! mysql_root "$dir" --password="$MYSQL_ROOT_PASS" -e 'SELECT 1' >/dev/null 2>&1; then
		mysql_root "$dir" >>"$dir/mysql.log" 2>&1 <<SQL || fail_log mariadb "$dir/mysql.log" "setting up users failed"
CREATE DATABASE IF NOT EXISTS \`$MYSQL_DB\`;
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'127.0.0.1' IDENTIFIED BY '$MYSQL_PASS';
CREATE USER IF NOT EXISTS '$MYSQL_USER'@'localhost' IDENTIFIED BY '$MYSQL_PASS';
GRANT ALL PRIVILEGES ON \`${MYSQL_DB}%\`.* TO '$MYSQL_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`${MYSQL_DB}%\`.* TO '$MYSQL_USER'@'localhost';
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '$MYSQL_ROOT_PASS';
ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '$MYSQL_ROOT_PASS';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
ALTER USER 'root'@'localhost' IDENTIFIED BY '$MYSQL_ROOT_PASS';
FLUSH PRIVILEGES;
SQL
	fi
	# The test user must really log in over TCP.
	mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P"$port" -u"$MYSQL_USER" \
		--password="$MYSQL_PASS" "$MYSQL_DB" -e 'SELECT 1' >/dev/null 2>>"$dir/mysql.log" ||
		fail_log mariadb "$dir/mysql.log" "test user cannot log in over TCP"
}

cmd_stop_mysql() { stop_pid mariadb "$1/mysql.pid" "$1/mysql.sock"; }

# ---------------------------------------------------------------- both

write_env() {
	local dir=$1 zk my
	zk=$(<"$dir/zk.port")
	my=$(<"$dir/mysql.port")
	cat >"$dir/env.tmp" <<ENV
export EJ_TEST_ZK=127.0.0.1:$zk
export EJ_TEST_MYSQL_DSN='$MYSQL_USER:$MYSQL_PASS@tcp(127.0.0.1:$my)/$MYSQL_DB?parseTime=true'
export EJ_TEST_MYSQL_ADMIN_DSN='root:$MYSQL_ROOT_PASS@tcp(127.0.0.1:$my)/?parseTime=true'
export EJ_TEST_SERVICES_DIR='$dir'
export EJ_TEST_SERVICES_SCRIPT='$SCRIPT'
ENV
	mv "$dir/env.tmp" "$dir/env"
}

cmd_status() {
	local dir=$1 rc=0
	if alive "$dir/zk.pid" "$dir/zk/zoo.cfg"; then echo "zookeeper: running, pid $(<"$dir/zk.pid"), port $(<"$dir/zk.port")"; else echo "zookeeper: stopped"; rc=1; fi
	if alive "$dir/mysql.pid" "$dir/mysql.sock"; then echo "mariadb: running, pid $(<"$dir/mysql.pid"), port $(<"$dir/mysql.port")"; else echo "mariadb: stopped"; rc=1; fi
	return $rc
}

main() {
	local cmd=${1:-} dir n
	case $cmd in
	install) cmd_install; return ;;
	start | stop | status | start-zk | stop-zk | restart-zk | start-mysql | stop-mysql | restart-mysql) ;;
	start-ensemble | stop-ensemble | status-ensemble) ;;
	start-zk-node | stop-zk-node | kill-zk-node)
		n=$(ens_node_arg "${3:-}")
		dir=$(abs_dir "${2:-}")
		"cmd_${cmd//-/_}" "$dir" "$n"
		return
		;;
	*) die "usage: $0 install | {start|stop|status|start-zk|stop-zk|restart-zk|start-mysql|stop-mysql|restart-mysql|start-ensemble|stop-ensemble|status-ensemble} DIR | {start-zk-node|stop-zk-node|kill-zk-node} DIR N" ;;
	esac
	dir=$(abs_dir "${2:-}")
	case $cmd in
	start)
		cmd_start_zk "$dir"
		cmd_start_mysql "$dir"
		write_env "$dir"
		;;
	stop)
		cmd_stop_zk "$dir"
		cmd_stop_mysql "$dir"
		;;
	status) cmd_status "$dir" ;;
	start-zk) cmd_start_zk "$dir" ;;
	stop-zk) cmd_stop_zk "$dir" ;;
	restart-zk) cmd_stop_zk "$dir" && cmd_start_zk "$dir" ;;
	start-mysql) cmd_start_mysql "$dir" ;;
	stop-mysql) cmd_stop_mysql "$dir" ;;
	restart-mysql) cmd_stop_mysql "$dir" && cmd_start_mysql "$dir" ;;
	start-ensemble) cmd_start_ensemble "$dir" ;;
	stop-ensemble) cmd_stop_ensemble "$dir" ;;
	status-ensemble) cmd_status_ensemble "$dir" ;;
	esac
}

# Sourced (scripts/cluster.sh reuses the helpers above): define only.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
