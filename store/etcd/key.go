package etcd

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Key scheme. A node at path p of depth d (the number of its segments)
// is the etcd key prefix+"/n/"+d+p: "/a/b" is "<prefix>/n/2/a/b". The
// direct children of p are then exactly the keys that start with
// prefix+"/n/"+(d+1)+p+"/", one contiguous range in name order, so a
// listing reads only the children, never the grandchildren. A subtree is
// one such range per depth below it (see Store.Commit's deletes). The
// root is not stored. The guard key prefix+"/g" is outside the nodes.
type keys struct {
	prefix string // no trailing slash
	nodes  string // prefix + "/n/": every node key starts with it
	guard  string
}

func newKeys(prefix string) keys {
	prefix = strings.TrimSuffix(prefix, "/")
	return keys{prefix: prefix, nodes: prefix + "/n/", guard: prefix + "/g"}
}

// depth is the number of segments of a valid path ("/" has 0).
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// node is p's key.
func (k keys) node(p string) string { return k.nodes + strconv.Itoa(depth(p)) + p }

// level is the range prefix of p's descendants at depth d (> depth(p)).
func (k keys) level(p string, d int) string {
	if p == "/" {
		return k.nodes + strconv.Itoa(d) + "/"
	}
	return k.nodes + strconv.Itoa(d) + p + "/"
}

// children is the range prefix of p's direct children.
func (k keys) children(p string) string { return k.level(p, depth(p)+1) }

// path is the store path of a node key ("" if key is not one).
func (k keys) path(key string) string {
	rest, ok := strings.CutPrefix(key, k.nodes)
	if !ok {
		return ""
	}
	i := strings.IndexByte(rest, '/')
	if i <= 0 {
		return ""
	}
	return rest[i:]
}

// Values are stored as the node's version (uvarint) and then its bytes:
// the store's version counts every write of a commit (a create and two
// sets in one commit make version 2) where etcd's counts one per txn.

// EncodeValue is what the store keeps at a node's key: its store version
// and its value; DecodeValue reads it back. For what writes the store's
// keys with the client itself (the election on etcd).
func EncodeValue(version int64, value []byte) string { return encode(version, value) }

// DecodeValue: see EncodeValue.
func DecodeValue(raw []byte) (version int64, value []byte, err error) { return decode(raw) }

func encode(version int64, value []byte) string {
	b := make([]byte, 0, binary.MaxVarintLen64+len(value))
	b = binary.AppendUvarint(b, uint64(version))
	return string(append(b, value...))
}

func decode(raw []byte) (version int64, value []byte, err error) {
	v, n := binary.Uvarint(raw)
	if n <= 0 {
		return 0, nil, fmt.Errorf("etcd store: malformed value (%d bytes)", len(raw))
	}
	if len(raw) > n {
		value = append([]byte(nil), raw[n:]...)
	}
	return int64(v), value, nil
}

// prefixEnd is the end of the range of keys that start with p.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}
