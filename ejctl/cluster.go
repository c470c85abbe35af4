package ejctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// storeMember is a row of GET /api/operate/store/members.
type storeMember struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	Healthy    bool     `json:"healthy"`
	Leader     bool     `json:"leader"`
	RaftIndex  uint64   `json:"raftIndex"`
	DBSize     int64    `json:"dbSizeBytes"`
	DBInUse    int64    `json:"dbSizeInUseBytes"`
	Alarms     []string `json:"alarms"`
	Errors     []string `json:"errors"`
}

type addedMember struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	PeerURL        string `json:"peerURL"`
	InitialCluster string `json:"initialCluster"`
}

const storeAPI = "/api/operate/store"

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

func joinOrDash(s []string) string { return orDash(strings.Join(s, "; ")) }

func (c clusterGroup) clusterCmd() *cobra.Command {
	cmd := group("cluster", "The clusters jobs run on (ls, drain, undrain) and the replicated store's (registry=etcd, admin): members, remove, add, backup, restore")
	cmd.AddCommand(c.clustersLsCmd(), c.clustersDrainCmd(), c.clustersUndrainCmd(),
		c.clusterMembersCmd(), c.clusterRemoveCmd(), c.clusterAddCmd(), c.clusterBackupCmd(), c.clusterRestoreCmd())
	return cmd
}

// clusterMembersCmd: ejctl cluster members.
func (c clusterGroup) clusterMembersCmd() *cobra.Command {
	members := &cobra.Command{
		Use: "members", Short: "List the members: health, raft leader, raft index, store size, alarms", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ms []storeMember
			if err := c.client.get(cmd.Context(), storeAPI+"/members", nil, &ms); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(ms)
			}
			rows := make([][]string, 0, len(ms))
			for _, m := range ms {
				rows = append(rows, []string{cmpOr(m.Name, "(not started)"), m.ID, yesNo(m.Healthy), yesNo(m.Leader),
					strconv.FormatUint(m.RaftIndex, 10), mib(m.DBSize), mib(m.DBInUse), strings.Join(m.PeerURLs, ","), joinOrDash(m.Alarms), joinOrDash(m.Errors)})
			}
			return c.table([]string{"NAME", "ID", "HEALTHY", "LEADER", "RAFT INDEX", "DB SIZE", "IN USE", "PEER URL", "ALARMS", "ERRORS"}, rows)
		},
	}
	return members
}

// clusterRemoveCmd: ejctl cluster remove MEMBER.
func (c clusterGroup) clusterRemoveCmd() *cobra.Command {
	var yes bool
	remove := &cobra.Command{
		Use: "remove MEMBER", Short: "Remove a member (name or hex id): a dead one, before its replacement", Args: exactArgs("MEMBER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.confirmed(yes, fmt.Sprintf("Remove member %s from the cluster?", args[0])); err != nil {
				return err
			}
			if err := c.client.del(cmd.Context(), storeAPI+"/members/"+seg(args[0])); err != nil {
				return err
			}
			c.say("removed %s", args[0])
			return nil
		},
	}
	remove.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return remove
}

// clusterAddCmd: ejctl cluster add NAME PEER_URL.
func (c clusterGroup) clusterAddCmd() *cobra.Command {
	add := &cobra.Command{
		Use: "add NAME PEER_URL", Short: "Add a member; then start it with an empty data directory and what this prints", Args: exactArgs("NAME", "PEER_URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var a addedMember
			if err := c.client.sendJSONOnce(cmd.Context(), http.MethodPost, storeAPI+"/members", map[string]string{"name": args[0], "peerURL": args[1]}, &a); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(a)
			}
			c.say("added %s (%s); start it with an empty data directory and:\n  etcd_name=%s\n  etcd_peer_url=%s\n  etcd_peers=%s\n  etcd_join=true",
				a.Name, a.ID, a.Name, a.PeerURL, a.InitialCluster)
			return nil
		},
	}
	return add
}

// clusterBackupCmd: ejctl cluster backup FILE.
func (c clusterGroup) clusterBackupCmd() *cobra.Command {
	backup := &cobra.Command{
		Use: "backup FILE", Short: "Back the whole registry up to FILE (- for stdout): a logical dump at one revision", Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error { return c.backup(cmd.Context(), args[0]) },
	}
	return backup
}

// clusterRestoreCmd: ejctl cluster restore FILE.
func (c clusterGroup) clusterRestoreCmd() *cobra.Command {
	var yesRestore bool
	restore := &cobra.Command{
		Use: "restore FILE", Short: "Replace the whole registry with a backup (- for stdin); the leader's term ends", Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.confirmed(yesRestore, "Replace the whole registry with "+args[0]+"? Changes since the backup are lost."); err != nil {
				return err
			}
			return c.restore(cmd.Context(), args[0])
		},
	}
	restore.Flags().BoolVarP(&yesRestore, "yes", "y", false, "do not ask for confirmation")
	return restore
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// confirmed asks question unless yes; with no terminal it wants --yes.
func (c clusterGroup) confirmed(yes bool, question string) error {
	if yes {
		return nil
	}
	if !c.stdinTTY() {
		return refusef("%s Pass --yes to confirm (standard input is not a terminal to ask on)", question)
	}
	ok, err := c.confirm(question + " [y/N] ")
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed: nothing changed")
	}
	return nil
}

// backup streams the dump to a temporary file beside FILE and renames it
// once whole (its trailer read), so FILE is never a partial backup.
func (c clusterGroup) backup(ctx context.Context, file string) error {
	var w io.Writer = c.env.Stdout
	var tmp *os.File
	if file != "-" {
		var err error
		if tmp, err = os.CreateTemp(filepath.Dir(file), ".ejctl-backup-*"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		w = tmp
	}
	tail := &lastLine{}
	n, err := c.client.download(ctx, storeAPI+"/backup", io.MultiWriter(w, tail))
	if err != nil {
		return err
	}
	if !bytes.Contains(tail.line, []byte(`"end":true`)) {
		return fmt.Errorf("backup: the answer ended before its trailer (%d bytes): the backup is incomplete", n)
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), file); err != nil {
			return err
		}
		c.say("backed up the registry to %s (%d bytes; %s)", file, n, strings.TrimSpace(string(tail.line)))
	}
	return nil
}

func (c clusterGroup) restore(ctx context.Context, file string) error {
	var r io.Reader = c.env.Stdin
	var size int64
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		r = f
	}
	var res struct {
		Nodes    int   `json:"nodes"`
		Deleted  int   `json:"deleted"`
		Revision int64 `json:"revision"`
	}
	if err := c.client.call(ctx, request{method: http.MethodPost, path: storeAPI + "/restore", body: r, length: size,
		contentType: "application/octet-stream", noTimeout: true}, &res); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(res)
	}
	c.say("restored %d nodes (%d deleted) at revision %d; the leader's term ended, the next leader reads the restored registry", res.Nodes, res.Deleted, res.Revision)
	return nil
}

// lastLine keeps the last non-empty line written to it.
type lastLine struct {
	cur, line []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			if len(l.cur) > 0 {
				l.line, l.cur = l.cur, nil
			}
			continue
		}
		if len(l.cur) < 4096 {
			l.cur = append(l.cur, b)
		}
	}
	return len(p), nil
}

// download streams a GET's body to w; an answer outside 2xx is an
// *APIError.
func (c *Client) download(ctx context.Context, path string, w io.Writer) (int64, error) {
	var n int64
	err := c.call(ctx, request{method: http.MethodGet, path: path, noTimeout: true, sink: func(body io.Reader) error {
		var err error
		n, err = io.Copy(w, body)
		return err
	}}, nil)
	return n, err
}
