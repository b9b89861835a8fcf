//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package store

import "os"

// lockFile does nothing on this system: one Dir per directory is not
// enforced here.
func lockFile(f *os.File) error { return nil }

func unlockFile(f *os.File) error { return nil }

// syncDir does nothing on this system, where directories cannot be
// fsynced; renames are made durable by the file system itself or not at all.
func syncDir(dir *os.Root) error { return nil }
