package values

// Unexported bounds that the external tests need.
const MaxUnrecordedForTest = maxUnrecorded
