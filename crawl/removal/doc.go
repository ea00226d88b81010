// Package removal carries out a site owner's verified request to remove a
// domain from every file mapthenet keeps (DESIGN.md, `remove`).
//
// The operator gives the owner a token (Token: an HMAC of the domain under a
// secret kept in the data directory, so it is stable and cannot be guessed
// for another domain). The owner proves control of the domain by publishing
// it one of three ways: a DNS TXT record mapthenet-verification=<token> on
// the domain, a file /.well-known/mapthenet-verification.txt holding the
// token, or <meta name="mapthenet-verification" content="<token>"> on the
// home page. Checker tries them in that order; when one holds, Verify
// removes the domain through a Remover (the graph store). A failed proof
// removes nothing and reports what every proof found.
package removal

import "time"

// Remover deletes a domain for good; *graph.Store is one.
type Remover interface {
	RemoveDomain(name, reason, proof string, at time.Time) error
}
