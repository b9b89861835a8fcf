// Package storetest provides the conformance suite every backend of
// [values.Durable] passes ([Run]: the directory and memory stores of the
// package store and the Redis store run the same tests), and test aids for
// code that persists through a values.Durable ([Failing]). Nothing in it
// is meant for production use.
package storetest
