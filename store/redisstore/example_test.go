package redisstore_test

import (
	"log"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store/redisstore"
)

// Workers that share one Redis share its sessions: any worker reopens any
// session and reads every value it stored, whichever worker stored it.
// (Compiled, not run: it needs a Redis server.)
func ExampleOpenURL() {
	st, err := redisstore.OpenURL("redis://127.0.0.1:6379/0") // or redis+cluster://HOST:PORT?addr=HOST:PORT
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	vals, err := values.Open(st, "chat-42")
	if err != nil {
		log.Fatal(err)
	}
	vals.PutOutput([]byte(`{"rows":[1,2,3]}`)) // r1, for every worker that opens chat-42
}
