# shellcheck shell=bash
# zk-ensemble.sh — sourced by services.sh: a 3-server ZooKeeper quorum on
# 127.0.0.1 for the cluster-mode tests and scripts/cluster.sh. Layout:
#   DIR/zk-ensemble/ports         "N CLIENT PEER ELECTION" per server, picked once
#   DIR/zk-ensemble/nN/zoo.cfg    server N's config; nN/data holds myid and its data
#   DIR/zk-ensemble/nN.pid, nN.log
#   DIR/ensemble.env              the connect strings (see services.sh)
# Uses die, free_port, port_in_use, alive, spawn, stop_pid, fail_log, zk_ruok
# and zk_classpath from services.sh.

ENS_NODES=(1 2 3)

ens_node_arg() {
	case ${1:-} in
	1 | 2 | 3) echo "$1" ;;
	*) die "ensemble server number must be 1, 2 or 3, got '${1:-}'" ;;
	esac
}

ens_cfg() { echo "$1/zk-ensemble/n$2/zoo.cfg"; }

# ens_port DIR N FIELD: FIELD 2 = client, 3 = peer, 4 = election port of server N.
ens_port() { awk -v n="$2" -v f="$3" '$1 == n { print $f }' "$1/zk-ensemble/ports"; }

ens_alloc_ports() {
	local dir=$1 p n used=" " list=()
	[[ -s $dir/zk-ensemble/ports ]] && return 0
	mkdir -p "$dir/zk-ensemble"
	while ((${#list[@]} < 9)); do
		p=$(free_port)
		[[ $used == *" $p "* ]] && continue
		used+="$p "
		list+=("$p")
	done
	: >"$dir/zk-ensemble/ports.tmp"
	for n in "${ENS_NODES[@]}"; do
		echo "$n ${list[$(((n - 1) * 3))]} ${list[$(((n - 1) * 3 + 1))]} ${list[$(((n - 1) * 3 + 2))]}" \
			>>"$dir/zk-ensemble/ports.tmp"
	done
	mv "$dir/zk-ensemble/ports.tmp" "$dir/zk-ensemble/ports"
}

ens_write_cfg() {
	local dir=$1 n=$2 m node
	node=$dir/zk-ensemble/n$n
	mkdir -p "$node/data"
	echo "$n" >"$node/data/myid"
	# Same test settings as the single server; initLimit/syncLimit are in
	# ticks (10 s to join, 2.5 s for a follower to fall behind).
	{
		cat <<CFG
tickTime=500
initLimit=20
syncLimit=5
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$node/data
clientPort=$(ens_port "$dir" "$n" 2)
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,conf
forceSync=no
CFG
		for m in "${ENS_NODES[@]}"; do
			echo "server.$m=127.0.0.1:$(ens_port "$dir" "$m" 3):$(ens_port "$dir" "$m" 4)"
		done
	} >"$node/zoo.cfg"
}

# zk_mode PORT prints the server's Mode (leader, follower, standalone) when it
# serves requests; fails otherwise.
zk_mode() {
	local out="" mode
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'srvr' >&3
	read -r -d '' -t 2 out <&3 || true
	exec 3<&- 3>&-
	mode=$(sed -n 's/^Mode: //p' <<<"$out")
	[[ -n $mode ]] || return 1
	echo "$mode"
}

ens_serving() { zk_mode "$1" | grep -qE '^(leader|follower)$'; }

ens_running_count() {
	local dir=$1 n c=0
	for n in "${ENS_NODES[@]}"; do
		alive "$dir/zk-ensemble/n$n.pid" "$(ens_cfg "$dir" "$n")" && c=$((c + 1))
	done
	echo "$c"
}

# ens_spawn DIR N starts server N unless it runs; returns without waiting.
ens_spawn() {
	local dir=$1 n=$2 cfg pidfile port
	cfg=$(ens_cfg "$dir" "$n")
	pidfile=$dir/zk-ensemble/n$n.pid
	alive "$pidfile" "$cfg" && return 0
	ens_write_cfg "$dir" "$n"
	for port in $(ens_port "$dir" "$n" 2) $(ens_port "$dir" "$n" 3) $(ens_port "$dir" "$n" 4); do
		port_in_use "$port" && die "zookeeper server $n: port $port is taken by another process"
	done
	rm -f "$pidfile"
	spawn "$pidfile" "$dir/zk-ensemble/n$n.log" java -Xmx"${EJ_ZK_HEAP:-128m}" -XX:+UseSerialGC \
		-XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false -Djute.maxbuffer=8388608 \
		-cp "$(zk_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
}

# ens_wait DIR N CHECK: wait until CHECK succeeds on server N's client port.
ens_wait() {
	local dir=$1 n=$2 check=$3
	wait_until "zookeeper server $n" "$dir/zk-ensemble/n$n.pid" "$(ens_cfg "$dir" "$n")" \
		"$dir/zk-ensemble/n$n.log" "$check" "$(ens_port "$dir" "$n" 2)"
}

write_ensemble_env() {
	local dir=$1 n servers=""
	for n in "${ENS_NODES[@]}"; do servers+="${servers:+,}127.0.0.1:$(ens_port "$dir" "$n" 2)"; done
	{
		echo "export EJ_TEST_ZK_ENSEMBLE=$servers"
		for n in "${ENS_NODES[@]}"; do echo "export EJ_TEST_ZK_NODE_$n=127.0.0.1:$(ens_port "$dir" "$n" 2)"; done
		echo "export EJ_TEST_ZK_ENSEMBLE_DIR='$dir'"
		echo "export EJ_TEST_SERVICES_SCRIPT='$SCRIPT'"
	} >"$dir/ensemble.env.tmp"
	mv "$dir/ensemble.env.tmp" "$dir/ensemble.env"
}

cmd_start_ensemble() {
	local dir=$1 n
	ens_alloc_ports "$dir"
	for n in "${ENS_NODES[@]}"; do ens_spawn "$dir" "$n"; done
	for n in "${ENS_NODES[@]}"; do ens_wait "$dir" "$n" ens_serving; done
	write_ensemble_env "$dir"
}

# cmd_start_zk_node DIR N: with a quorum possible (two servers running) it
# waits until server N serves; alone it waits only until the process answers.
cmd_start_zk_node() {
	local dir=$1 n=$2
	[[ -s $dir/zk-ensemble/ports ]] || die "no ensemble in $dir (run start-ensemble first)"
	ens_spawn "$dir" "$n"
	if (($(ens_running_count "$dir") >= 2)); then
		ens_wait "$dir" "$n" ens_serving
	else
		ens_wait "$dir" "$n" zk_ruok
	fi
}

cmd_stop_zk_node() { stop_pid "zookeeper server $2" "$1/zk-ensemble/n$2.pid" "$(ens_cfg "$1" "$2")"; }

cmd_kill_zk_node() {
	local pidfile=$1/zk-ensemble/n$2.pid cfg
	cfg=$(ens_cfg "$1" "$2")
	alive "$pidfile" "$cfg" || return 0
	kill -KILL "$(<"$pidfile")" 2>/dev/null || true
	for _ in $(seq 1 50); do
		alive "$pidfile" "$cfg" || break
		sleep 0.1
	done
	rm -f "$pidfile"
}

cmd_stop_ensemble() {
	local dir=$1 n pids=()
	for n in "${ENS_NODES[@]}"; do
		cmd_stop_zk_node "$dir" "$n" &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || true; done
}

cmd_status_ensemble() {
	local dir=$1 n rc=0 mode
	for n in "${ENS_NODES[@]}"; do
		if [[ -s $dir/zk-ensemble/ports ]] && alive "$dir/zk-ensemble/n$n.pid" "$(ens_cfg "$dir" "$n")"; then
			mode=$(zk_mode "$(ens_port "$dir" "$n" 2)" 2>/dev/null) || mode="not serving"
			echo "zookeeper server $n: running, pid $(<"$dir/zk-ensemble/n$n.pid"), port $(ens_port "$dir" "$n" 2), $mode"
		else
			echo "zookeeper server $n: stopped"
			rc=1
		fi
	done
	return $rc
}
