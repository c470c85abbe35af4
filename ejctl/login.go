package ejctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func (c tenancyGroup) loginCmd() *cobra.Command {
	var user string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "login [--username USER] [--password-stdin]",
		Short: "Log in and store the token (and address) in the config file",
		Long: "Log in with POST /api/login and store the token and the address in the config file (mode 0600).\n" +
			"The password is read from standard input (one line); with --token the given token is stored as it is.",
		Example: "  echo \"$PASSWORD\" | ejctl login --addr http://10.0.0.5:8899 --username admin --password-stdin\n" +
			"  ejctl login --token \"$CI_TOKEN\"",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.settings.ConfigPath == "" {
				return errors.New("login: no config file: set HOME, XDG_CONFIG_HOME, EJCTL_CONFIG or --config")
			}
			token, role, expires := c.token, "", time.Time{}
			if token == "" {
				open, err := c.accessOpen(cmd.Context())
				if err != nil {
					return err
				}
				if open {
					c.say("Access to %s is open (the scheduler has no auth_username): every caller is an admin, no login is needed; nothing saved", c.settings.Addr)
					return nil
				}
				if token, role, expires, err = c.login(cmd, user, passwordStdin); err != nil {
					return err
				}
			}
			file, _ := loadConfig(c.settings.ConfigPath)
			nsNote := ""
			if role != "" {
				var picked string
				picked, nsNote = c.namespaceAfterLogin(cmd.Context(), token)
				if picked != "" {
					file.Namespace = picked
				}
			}
			if err := saveConfig(c.settings.ConfigPath, FileConfig{Addr: c.settings.Addr, Token: token, Namespace: file.Namespace}); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(map[string]any{"addr": c.settings.Addr, "role": role, "expiresAt": expires, "config": c.settings.ConfigPath})
			}
			msg := fmt.Sprintf("Logged in to %s", c.settings.Addr)
			if role != "" {
				msg += fmt.Sprintf(" as %s (%s) until %s", user, role, fmtTime(expires))
			}
			c.say("%s; token saved in %s", msg, c.settings.ConfigPath)
			if nsNote != "" {
				c.say("%s", nsNote)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&user, "username", "u", "", "user name: the admin (auth_username), the guest (auth_guest_username) or a user of the users file")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input (also the default when no --token is given)")
	return cmd
}

// namespaceAfterLogin checks the namespace ejctl will act in against the
// user's roles: with no role there and exactly one namespace of their
// own, that one becomes the config file's default (unless -n or
// EJCTL_NAMESPACE named the namespace); otherwise it says how to pick.
func (c tenancyGroup) namespaceAfterLogin(ctx context.Context, token string) (picked, note string) {
	me := *c.client
	me.Token = token
	var w whoAmI
	if err := me.get(ctx, "/api/whoami", nil, &w); err != nil || w.Open || w.Admin || w.Role == "admin" {
		return "", ""
	}
	ns := c.settings.Namespace
	if w.Namespaces[ns] != "" || len(w.Namespaces) == 0 {
		return "", ""
	}
	names := make([]string, 0, len(w.Namespaces))
	for n := range w.Namespaces {
		names = append(names, n)
	}
	slices.Sort(names)
	explicit := c.namespace != "" || c.env.Getenv("EJCTL_NAMESPACE") != ""
	if len(names) == 1 && !explicit {
		return names[0], fmt.Sprintf("You have no role in namespace %s: namespace %s (your only one) is now ejctl's default (ejctl ns use NAME changes it)", ns, names[0])
	}
	if len(names) == 1 {
		return "", fmt.Sprintf("Note: you have no role in namespace %s; yours is %s (%s): ejctl ns use %s, or -n %s", ns, names[0], w.Namespaces[names[0]], names[0], names[0])
	}
	roles := make([]string, len(names))
	for i, n := range names {
		roles[i] = fmt.Sprintf("%s (%s)", n, w.Namespaces[n])
	}
	return "", fmt.Sprintf("Note: you have no role in namespace %s; yours are %s: pick one with ejctl ns use NAME, or -n NAME", ns, strings.Join(roles, ", "))
}

func (c tenancyGroup) login(cmd *cobra.Command, user string, passwordStdin bool) (string, string, time.Time, error) {
	if user == "" {
		return "", "", time.Time{}, usagef("login: --username is required (or --token to store a token)")
	}
	prompt := !passwordStdin && !c.json()
	if prompt {
		fmt.Fprint(c.env.Stderr, "Password: ")
	}
	line, err := bufio.NewReader(c.env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", "", time.Time{}, fmt.Errorf("login: read the password from standard input: %w", err)
	}
	if prompt {
		fmt.Fprintln(c.env.Stderr)
	}
	var out struct {
		Token     string    `json:"token"`
		Role      string    `json:"role"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	in := map[string]string{"username": user, "password": strings.TrimRight(line, "\r\n")}
	c.client.Token = ""
	if err := c.client.sendJSON(cmd.Context(), http.MethodPost, "/api/login", in, &out); err != nil {
		return "", "", time.Time{}, err
	}
	return out.Token, out.Role, out.ExpiresAt, nil
}

func (c tenancyGroup) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "End the session and forget the token in the config file",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.settings.ConfigPath == "" {
				return errors.New("logout: no config file: set HOME, XDG_CONFIG_HOME, EJCTL_CONFIG or --config")
			}
			file, err := loadConfig(c.settings.ConfigPath)
			if err != nil {
				return err
			}
			if file.Token != "" {
				c.client.Token = file.Token
				if err := c.client.call(cmd.Context(), request{method: http.MethodPost, path: "/api/logout"}, nil); err != nil {
					fmt.Fprintln(c.env.Stderr, "ejctl: warning:", err)
				}
			}
			file.Token = ""
			if err := saveConfig(c.settings.ConfigPath, file); err != nil {
				return err
			}
			c.say("Logged out; token removed from %s", c.settings.ConfigPath)
			return nil
		},
	}
}

// whoAmI is the answer of GET /api/whoami.
type whoAmI struct {
	User       string            `json:"user"`
	Role       string            `json:"role"`
	Open       bool              `json:"open"`
	Admin      bool              `json:"admin"`
	Namespaces map[string]string `json:"namespaces"`
}

// accessOpen asks the scheduler, without credentials, whether access is
// open (no admin configured): then a login means nothing.
func (c tenancyGroup) accessOpen(ctx context.Context) (bool, error) {
	anon := *c.client
	anon.Token = ""
	var w whoAmI
	err := anon.get(ctx, "/api/whoami", nil, &w)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		return false, nil
	}
	return w.Open, err
}

func (c tenancyGroup) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Say which scheduler ejctl talks to, as which user and role (or that access is open)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var w whoAmI
			if err := c.client.get(cmd.Context(), "/api/whoami", nil, &w); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(map[string]any{"addr": c.settings.Addr, "user": w.User, "role": w.Role, "open": w.Open,
					"namespace": c.settings.Namespace, "namespaces": w.Namespaces})
			}
			if w.Open {
				c.say("%s: access is open (no auth_username configured): every caller is an admin", c.settings.Addr)
				return nil
			}
			if w.Role == "admin" {
				c.say("%s: user %s, role admin (may read and write every namespace, and manage namespaces); namespace %s", c.settings.Addr, w.User, c.settings.Namespace)
				return nil
			}
			what := "no role: may do nothing there"
			switch w.Namespaces[c.settings.Namespace] {
			case "edit":
				what = "edit: may read and write"
			case "view":
				what = "view: may only read"
			}
			c.say("%s: user %s, role %s; in namespace %s %s", c.settings.Addr, w.User, w.Role, c.settings.Namespace, what)
			if len(w.Namespaces) > 0 {
				names := make([]string, 0, len(w.Namespaces))
				for ns, r := range w.Namespaces {
					names = append(names, ns+"="+r)
				}
				slices.Sort(names)
				c.say("roles: %s", strings.Join(names, " "))
			}
			return nil
		},
	}
}
