// Package storetest provides test aids for code that persists through a
// [values.Durable]; the conformance suite every backend passes will live
// here too. Nothing in it is meant for production use.
package storetest
