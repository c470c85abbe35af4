package detector

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Labels of the masters' znodes (Mesos' MASTER_INFO_JSON_LABEL and MASTER_INFO_LABEL).
const (
	labelJSON     = "json.info"
	labelProtobuf = "info"
)

// member is one child of the group path that is a sequence node.
type member struct {
	node  string // the child's name, e.g. json.info_0000000003
	label string // "json.info", "info" or "" (unlabelled)
	seq   int32
}

// parseMember splits a child name as Mesos' group does: the text after the last "_" is the
// sequence, the first "_"-separated token (when there are several) the label. Children whose
// sequence is not a number are not members.
func parseMember(node string) (member, bool) {
	tokens := strings.FieldsFunc(node, func(r rune) bool { return r == '_' })
	if len(tokens) == 0 {
		return member{}, false
	}
	seq, err := strconv.ParseInt(tokens[len(tokens)-1], 10, 32)
	if err != nil {
		return member{}, false
	}
	m := member{node: node, seq: int32(seq)}
	if len(tokens) > 1 {
		m.label = tokens[0]
	}
	return m, true
}

// lowest returns the leading member among children: the one with the smallest sequence.
func lowest(children []string) (member, bool) {
	var best member
	found := false
	for _, c := range children {
		if m, ok := parseMember(c); ok && (!found || m.seq < best.seq) {
			best, found = m, true
		}
	}
	return best, found
}

// Master is what the detector reports of the leading master.
type Master struct {
	URL     string // http://host:port
	ID      string // MasterInfo.id ("" for the unlabelled format)
	Version string
	Node    string // the znode, e.g. json.info_0000000003
}

// masterInfo is the part of MasterInfo's JSON form the detector needs.
type masterInfo struct {
	ID       string `json:"id"`
	IP       uint32 `json:"ip"`
	Port     uint32 `json:"port"`
	PID      string `json:"pid"`
	Hostname string `json:"hostname"`
	Version  string `json:"version"`
	Address  struct {
		Hostname string `json:"hostname"`
		IP       string `json:"ip"`
		Port     uint32 `json:"port"`
	} `json:"address"`
}

// decodeMaster turns a member's data into a Master, following the member's label.
func decodeMaster(m member, data []byte, scheme string) (Master, error) {
	var info masterInfo
	switch m.label {
	case labelJSON:
		if err := json.Unmarshal(data, &info); err != nil {
			return Master{}, fmt.Errorf("znode %s: MasterInfo is not valid JSON: %w", m.node, err)
		}
	case labelProtobuf:
		var pb mesos.MasterInfo
		if err := pb.Unmarshal(data); err != nil {
			return Master{}, fmt.Errorf("znode %s: MasterInfo is not a valid protobuf: %w", m.node, err)
		}
		info = masterInfo{ID: pb.ID, IP: pb.IP, Port: pb.GetPort(), PID: pb.GetPID(), Hostname: pb.GetHostname(), Version: pb.GetVersion()}
	case "":
		return fromPID(m, strings.TrimSpace(string(data)), scheme)
	default:
		return Master{}, fmt.Errorf("znode %s: unknown label %q", m.node, m.label)
	}
	host := firstNonEmpty(info.Hostname, info.Address.Hostname, info.Address.IP)
	if host == "" && info.IP != 0 {
		host = packedIP(info.IP).String()
	}
	port := info.Port
	if port == 0 {
		port = info.Address.Port
	}
	if host == "" || port == 0 {
		return Master{}, fmt.Errorf("znode %s: MasterInfo names no host and port", m.node)
	}
	return Master{URL: scheme + "://" + net.JoinHostPort(host, strconv.Itoa(int(port))),
		ID: info.ID, Version: info.Version, Node: m.node}, nil
}

// fromPID reads the oldest format: the master's libprocess pid, "master@host:port".
func fromPID(m member, pid, scheme string) (Master, error) {
	_, hostPort, ok := strings.Cut(pid, "@")
	if _, _, err := net.SplitHostPort(hostPort); !ok || err != nil {
		return Master{}, fmt.Errorf("znode %s: %q is not a master pid like master@host:5050", m.node, pid)
	}
	return Master{URL: scheme + "://" + hostPort, Node: m.node}, nil
}

// packedIP decodes MasterInfo.ip: the address's bytes in network order, read as a host-order
// (little-endian on the machines Mesos runs on) uint32.
func packedIP(v uint32) net.IP {
	b := make(net.IP, 4)
	binary.LittleEndian.PutUint32(b, v)
	return b
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
