# Sourced by the perf scripts that start a release server of their own (smallreq.sh,
# replay.sh, grpc.sh): `server_addr STDOUT STDERR` waits (10 s at most) until the server
# whose output goes to those files says it listens, and prints its public address; if it
# never does, it says where the server's errors are and fails.
server_addr() {
  for _ in $(seq 1 100); do
    grep -q "admin on" "$1" 2>/dev/null && break
    sleep 0.1
  done
  local addr
  addr=$(sed -n 's|.*listening on http://||p' "$1" | head -1)
  [ -n "$addr" ] || { echo "the server did not start; see $2" >&2; return 1; }
  echo "$addr"
}
