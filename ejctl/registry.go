package ejctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/spf13/cobra"
)

// damagedEntry is a registry entry set aside because its value does not
// decode (GET /api/registry/damaged).
type damagedEntry struct {
	Path      string `json:"path"`
	Namespace string `json:"namespace"`
	Subtree   string `json:"subtree"`
	Error     string `json:"error"`
	Size      int    `json:"size"`
}

const damagedAPI = "/api/registry/damaged"

// maxRepair bounds the replacement value read from a file.
const maxRepair = 16 << 20

func (c appGroup) registryCmd() *cobra.Command {
	cmd := group("registry", "The registry's damaged entries (stored values that do not decode, set aside): list, remove, replace")
	cmd.AddCommand(c.registryDamagedCmd(), c.registryRmCmd(), c.registryPutCmd())
	return cmd
}

// registryDamagedCmd: ejctl registry damaged.
func (c appGroup) registryDamagedCmd() *cobra.Command {
	var scan bool
	damaged := &cobra.Command{
		Use: "damaged", Short: "List the damaged entries you may see: store path, namespace, subtree, decode error", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var q url.Values
			if scan {
				q = url.Values{"scan": {"true"}}
			}
			var all []damagedEntry
			if err := c.client.get(cmd.Context(), damagedAPI, q, &all); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(all)
			}
			rows := make([][]string, 0, len(all))
			for _, d := range all {
				rows = append(rows, []string{d.Path, d.Namespace, d.Subtree, strconv.Itoa(d.Size), d.Error})
			}
			return c.table([]string{"PATH", "NAMESPACE", "SUBTREE", "BYTES", "ERROR"}, rows)
		},
	}
	damaged.Flags().BoolVar(&scan, "scan", false, "walk and decode the whole registry first (else: the entries the scheduler met, each read again)")
	return damaged
}

// registryRmCmd: ejctl registry rm PATH.
func (c appGroup) registryRmCmd() *cobra.Command {
	var yes bool
	rm := &cobra.Command{
		Use: "rm PATH", Short: "Remove a damaged entry by its store path (admin; only an entry that does not decode)", Args: exactArgs("PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				if !c.stdinTTY() {
					return refusef("rm: this deletes the registry entry %s; pass --yes to confirm (standard input is not a terminal to ask on)", args[0])
				}
				ok, err := c.confirm(fmt.Sprintf("Delete the registry entry %s? [y/N] ", args[0]))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not confirmed: nothing deleted")
				}
			}
			if err := c.client.call(cmd.Context(), request{method: http.MethodDelete, path: damagedAPI,
				query: url.Values{"path": {args[0]}}}, nil); err != nil {
				return err
			}
			c.say("removed %s", args[0])
			return nil
		},
	}
	rm.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return rm
}

// registryPutCmd: ejctl registry put PATH FILE.
func (c appGroup) registryPutCmd() *cobra.Command {
	put := &cobra.Command{
		Use:   "put PATH FILE",
		Short: "Replace a damaged entry with FILE's value (- for stdin): it must decode, and an app or job be valid (admin)",
		Args:  exactArgs("PATH", "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = c.env.Stdin
			if args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			v, err := io.ReadAll(io.LimitReader(r, maxRepair+1))
			if err != nil {
				return err
			}
			if len(v) > maxRepair {
				return fmt.Errorf("the value has more than %d bytes", maxRepair)
			}
			if err := c.client.call(cmd.Context(), request{method: http.MethodPut, path: damagedAPI,
				query: url.Values{"path": {args[0]}}, body: bytes.NewReader(v), length: int64(len(v)), contentType: "application/json"}, nil); err != nil {
				return err
			}
			c.say("replaced %s", args[0])
			return nil
		},
	}
	return put
}
