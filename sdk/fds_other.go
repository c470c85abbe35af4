//go:build !unix

package sdk

import (
	"errors"
	"os"
)

func protocolFiles() (in, out *os.File, err error) {
	return nil, nil, errors.New("the resident line protocol needs a Unix system")
}
