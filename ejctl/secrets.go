package ejctl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// secretMeta is a secret as the API shows it: never its value.
type secretMeta struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	Size      int       `json:"size"`
	KeyID     string    `json:"keyId"`
	Version   int       `json:"version"`
	UpdatedBy string    `json:"updatedBy"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// maxSecret is the largest value the scheduler takes (secrets.MaxValue).
const maxSecret = 64 << 10

func (c tenancyGroup) secretCmd() *cobra.Command {
	cmd := group("secret", "The namespace's secrets: set (write once, never read back), ls, rm; jobs name them in their secrets field")
	cmd.Aliases = []string{"secrets"}
	cmd.AddCommand(c.secretSetCmd(), c.secretLsCmd(), c.secretRmCmd())
	return cmd
}

// secretSetCmd: ejctl secret set NAME.
func (c tenancyGroup) secretSetCmd() *cobra.Command {
	var from string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret's value, read from stdin or --from-file (never from the command line); overwrites an existing one",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = c.env.Stdin
			if from != "" {
				f, err := os.Open(from)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			} else if c.env.StdinIsTTY != nil && c.env.StdinIsTTY() {
				return errors.New("pipe the value in (ejctl secret set NAME < file) or pass --from-file")
			}
			v, err := io.ReadAll(io.LimitReader(r, maxSecret+1))
			if err != nil {
				return err
			}
			defer clear(v)
			if from == "" && len(v) > 0 && v[len(v)-1] == '\n' { // `echo x |` adds one
				v = v[:len(v)-1]
			}
			if len(v) > maxSecret {
				return fmt.Errorf("the value has more than %d bytes", maxSecret)
			}
			if len(v) == 0 {
				return errors.New("the value is empty")
			}
			var m secretMeta
			if err := c.client.sendJSON(cmd.Context(), http.MethodPut, c.secretsPath()+"/"+seg(args[0]),
				map[string]string{"valueBase64": base64.StdEncoding.EncodeToString(v)}, &m); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(m)
			}
			c.say("secret %s of namespace %s: version %d, %d bytes", m.Name, m.Namespace, m.Version, m.Size)
			return nil
		},
	}
	set.Flags().StringVar(&from, "from-file", "", "read the value from this file, as it is")
	return set
}

// secretLsCmd: ejctl secret ls.
func (c tenancyGroup) secretLsCmd() *cobra.Command {
	ls := &cobra.Command{
		Use: "ls", Short: "The namespace's secrets: names, sizes, who wrote them when (never a value)", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var all []secretMeta
			if err := c.client.get(cmd.Context(), c.secretsPath(), nil, &all); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(all)
			}
			rows := make([][]string, 0, len(all))
			for _, m := range all {
				rows = append(rows, []string{m.Name, strconv.Itoa(m.Version), strconv.Itoa(m.Size), m.KeyID, m.UpdatedBy, m.UpdatedAt.UTC().Format(time.RFC3339)})
			}
			return c.table([]string{"NAME", "VERSION", "BYTES", "KEY", "UPDATED BY", "UPDATED"}, rows)
		},
	}
	return ls
}

// secretRmCmd: ejctl secret rm NAME.
func (c tenancyGroup) secretRmCmd() *cobra.Command {
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a secret; refused while a job names it", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.client.del(cmd.Context(), c.secretsPath()+"/"+seg(args[0])); err != nil {
				return err
			}
			c.say("secret %s deleted", args[0])
			return nil
		},
	}
	return rm
}

func (c tenancyGroup) secretsPath() string {
	return "/api/namespaces/" + seg(c.settings.Namespace) + "/secrets"
}
