//go:build !unix

package config

import (
	"fmt"
	"io/fs"
)

// checkKeyFileMode: where there are no Unix permissions, the file must at
// least be a regular file.
func checkKeyFileMode(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("is not a regular file")
	}
	return nil
}
