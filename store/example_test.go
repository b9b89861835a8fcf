package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	values "github.com/agentvalues/values"
	"github.com/agentvalues/values/store"
)

func Example() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, err := store.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	body := []byte(`{"rows":[1,2,3]}`)
	key, err := st.PutBody("session-1", body)
	if err != nil {
		log.Fatal(err) // a caller keeps the value in memory and shows no key
	}
	rec := values.Record{Handle: "r1", Key: key, Kind: "object", Size: int64(len(body))}
	if err := st.AppendRecord("session-1", rec); err != nil {
		log.Fatal(err)
	}
	st.Close()

	// After a restart the session's handles and bodies are back.
	st, err = store.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	recs, _ := st.Records("session-1")
	got, _ := st.Body("session-1", recs[0].Key)
	fmt.Printf("%s = %s\n", recs[0].Handle, got)

	// Another session may not read it.
	_, err = st.Body("session-2", key)
	fmt.Println(errors.Is(err, store.ErrDenied))
	// Output:
	// r1 = {"rows":[1,2,3]}
	// true
}

func ExampleMemory_Plan() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st := store.NewMemory(store.WithTTL(time.Hour), store.WithClock(func() time.Time { return now }))
	key, _ := st.PutBody("s", []byte("old output"))

	now = now.Add(2 * time.Hour)
	p, _ := st.Plan(now)
	for _, it := range p.Delete {
		fmt.Println("would delete", it.Name[:15]+"…", it.Reason)
	}
	r, _ := st.Apply(p)
	fmt.Println("deleted", len(r.Deleted))

	_, err := st.Body("s", key)
	fmt.Println(errors.Is(err, store.ErrExpired))
	// Output:
	// would delete bodies/78e5f35b… expired
	// deleted 1
	// true
}
