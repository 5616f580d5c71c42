package huddle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// kv is a replicated key-value store: puts and deletes go to every
// member in total order ("put k v", "del k"), each member applies them to
// its map, and a member that joins takes the map at the cut of the view
// that admits it.
type kv struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *kv) Apply(msg huddle.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op, rest, _ := strings.Cut(string(msg.Payload), " "); op {
	case "put":
		k, v, _ := strings.Cut(rest, " ")
		s.m[k] = v
	case "del":
		delete(s.m, rest)
	}
}

func (s *kv) Snapshot(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.NewEncoder(w).Encode(s.m)
}

func (s *kv) Restore(r io.Reader) error {
	m := map[string]string{}
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = m
	return nil
}

func (s *kv) get(k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok
}

func (s *kv) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.m)) {
		fmt.Fprintf(&b, "%s=%s ", k, s.m[k])
	}
	return strings.TrimSpace(b.String())
}

// A replicated key-value store on the group: node 1 writes; node 2 joins
// later and takes the store's state at the cut of the view that admits
// it, then applies the writes that follow like every member.
func ExampleReplicated() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	join := func(id uint64) (*huddle.Group, *kv) {
		cfg := config.Local()
		cfg.ID = id
		store := &kv{m: map[string]string{}}
		g, err := net.Join(ctx, cfg, zerolog.Nop(), huddle.Replicated("kv", store))
		if err != nil {
			panic(err)
		}
		<-g.Replica("kv").Current() // the store is the group's
		return g, store
	}
	g1, _ := join(1)
	defer g1.Leave(ctx)
	svc := g1.Service("kv")
	for _, op := range []string{"put colour blue", "put size 3", "put shape round", "del size"} {
		if _, err := svc.Multicast(ctx, []byte(op), huddle.Total); err != nil {
			fmt.Println("put:", err)
			return
		}
	}
	g2, store2 := join(2)
	defer g2.Leave(ctx)
	if _, err := svc.Multicast(ctx, []byte("put colour green"), huddle.Total); err != nil {
		fmt.Println("put:", err)
		return
	}
	for ctx.Err() == nil {
		if v, _ := store2.get("colour"); v == "green" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("node 2:", store2)
	// Output:
	// node 2: colour=green shape=round
}
