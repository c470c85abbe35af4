// Package identity says who a caller is and what it may do: a Principal
// (a name, an admin flag, and a role per namespace), resolved from a
// request by a chain of Authenticators, each of which knows one kind of
// credential (the scheduler's signed session tokens, namespace API tokens,
// HTTP Basic against the configured admin and guest and the users file).
// A new kind of credential (an identity provider's ID token mapping a
// groups claim onto namespace roles) is one more Authenticator; nothing
// that checks a role changes.
//
// The users file (UsersFile) is YAML, reloaded when it changes:
//
//	users:
//	  - name: alice
//	    password: '$2y$05$…'          # bcrypt, as `htpasswd -nbB alice PASSWORD` writes it
//	    namespaces: {pay: edit, search: view}
package identity
