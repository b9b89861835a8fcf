package store

// BodiesDir is the directory of a Dir's bodies, under its root, for the
// conformance suite, whose tests live outside the package.
const BodiesDir = bodiesName
