package webbotauth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
)

// b64url is base64url without padding, the encoding of JWK members and of
// the thumbprint (RFC 7515 §2, RFC 7638 §3).
var b64url = base64.RawURLEncoding

// Thumbprint is the RFC 7638 JWK SHA-256 thumbprint of an Ed25519 public
// key, base64url without padding: the keyid of our signatures. For an OKP
// key the required members are crv, kty, x (RFC 8037 §2), hashed in exactly
// this lexicographic order with no whitespace (RFC 7638 §3.2); x is
// base64url, so it never needs JSON escaping and the bytes can be written out
// directly rather than through a JSON encoder whose output we would have to
// trust to be canonical.
func Thumbprint(pub ed25519.PublicKey) string {
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + b64url.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return b64url.EncodeToString(sum[:])
}

// PublicJWK is one public key as published in the directory. The field order
// is the order of the draft's E.2.3 vector, which we reproduce byte for byte;
// there is deliberately no d member.
type PublicJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	X   string `json:"x"`
	Use string `json:"use"`
}

// JWKS is a JWK Set (RFC 7517 §5).
type JWKS struct {
	Keys []PublicJWK `json:"keys"`
}

func publicJWK(pub ed25519.PublicKey) PublicJWK {
	return PublicJWK{Kty: "OKP", Crv: "Ed25519", Kid: Thumbprint(pub), X: b64url.EncodeToString(pub), Use: "sig"}
}
