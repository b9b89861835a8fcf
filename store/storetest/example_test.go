package storetest_test

import (
	"errors"
	"fmt"

	"github.com/agentvalues/values/store/storetest"
)

func ExampleFailing() {
	d := storetest.Failing(nil)
	key, err := d.PutBody("s", []byte("v"))
	fmt.Printf("%q %v\n", key, errors.Is(err, storetest.ErrFailing))
	// Output: "" true
}
