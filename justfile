# Shortcuts; `go test ./...` alone runs every test.

default:
    @just --list

# run every test (the README's test command)
test:
    go test ./...

# tests with the race detector, as CI runs them
race:
    go test -race -short ./...

# gofmt, go vet
check:
    test -z "$(gofmt -l .)"
    go vet ./...

# what CI runs
ci:
    bash .ci/run

# run seeded tests with 10× the seeds
soak:
    HUDDLE_TEST_SOAK=10 go test ./...

# search for datagrams that break the decoder or the protocol engine, control requests and configurations that break the node
fuzz time="2m":
    go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime {{time}} ./internal/wire
    go test -run '^$' -fuzz '^FuzzRecord$' -fuzztime {{time}} ./internal/wire
    go test -run '^$' -fuzz '^FuzzEngine$' -fuzztime {{time}} -fuzzminimizetime 3s ./multicast
    go test -run '^$' -fuzz '^FuzzReplicatedReceive$' -fuzztime {{time}} -fuzzminimizetime 3s ./mutex
    go test -run '^$' -fuzz '^FuzzMachine$' -fuzztime {{time}} ./membership
    go test -run '^$' -fuzz '^FuzzReceive$' -fuzztime {{time}} -fuzzminimizetime 3s ./election
    go test -run '^$' -fuzz '^FuzzReceive$' -fuzztime {{time}} -fuzzminimizetime 3s ./mutex
    go test -run '^$' -fuzz '^FuzzCoreInGroup$' -fuzztime {{time}} ./node
    go test -run '^$' -fuzz '^FuzzChunks$' -fuzztime {{time}} -fuzzminimizetime 3s ./node
    go test -run '^$' -fuzz '^FuzzProbe$' -fuzztime {{time}} -fuzzminimizetime 3s ./node
    go test -run '^$' -fuzz '^FuzzStatePiece$' -fuzztime {{time}} ./node
    go test -run '^$' -fuzz '^FuzzRequest$' -fuzztime {{time}} ./cmd/huddle/internal/control
    go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime {{time}} ./config

# wire codec benchmarks
bench:
    go test -run '^$' -bench . ./internal/wire

# run one node with a readable log
run *args:
    go run ./cmd/huddle run --log-format console {{args}}

# the virtual-LAN benchmarks, as root: reliable multicast against raw UDP, membership, total order, elections, the lock, state transfer, the unicast transport
lab-bench count="3":
    go test -run '^$' -bench LAN -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench Membership -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench Order -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench Election -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench Lock -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench State -benchtime {{count}}x ./cmd/huddle/internal/bench
    go test -run '^$' -bench Unicast -benchtime {{count}}x ./cmd/huddle/internal/bench

# the demo: a group on a private virtual LAN, with loss, a crash and a rejoin
demo *args:
    go run ./cmd/huddle demo {{args}}
