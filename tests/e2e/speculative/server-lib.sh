# Sourced by tests/e2e/speculative*.sh: start and stop stock llama-server on a free loopback port.
# Needs: $bin (llama.cpp bin dir), $work; sets $port, $server_pid.

free_port() {
    node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# start_server <log> [llama-server options...]: returns when /health answers 200.
start_server() {
    local log=$1
    shift
    port=$(free_port)
    "$bin/llama-server" --host 127.0.0.1 --port "$port" --no-webui "$@" >"$log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 600); do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "llama-server exited during start-up:"; tail -n 30 "$log"; return 1
        fi
        if node -e 'fetch(process.argv[1]).then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' \
            "http://127.0.0.1:$port/health"; then
            return 0
        fi
        sleep 0.3
    done
    echo "llama-server not ready after 180 s, see $log"
    return 1
}

# stop_server: SIGINT (the server frees its backends, which prints the XDNA profile), then waits.
stop_server() {
    [ -n "${server_pid:-}" ] || return 0
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -INT "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 200); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}
