package identity

import (
	"os"
	"syscall"
)

func stampOf(st os.FileInfo) stamp {
	s := stamp{size: st.Size(), mod: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.inode = sys.Ino
	}
	return s
}
