package ptx

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a lexical token of PTX source.
type tokKind uint8

const (
	tkIdent  tokKind = iota // names, opcodes, directives, registers, labels
	tkNumber                // integer and float literals (0f..., 0d..., 0x..., 1.5)
	tkString                // "..."
	tkPunct                 // one of , ; : { } [ ] ( ) + - < > @ ! = |
)

// token is one lexical token and the source line it starts on.
type token struct {
	kind tokKind
	text string
	line int
}

// lex splits PTX source into tokens, dropping comments.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := line
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("ptx: line %d: unterminated comment", start)
			}
			line += strings.Count(src[i:i+2+j], "\n")
			i += j + 4
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, fmt.Errorf("ptx: line %d: unterminated string", line)
			}
			toks = append(toks, token{tkString, src[i+1 : j], line})
			i = j + 1
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			// an opcode's modifiers such as L2::cache_hint or L1::no_allocate
			for j+1 < len(src) && src[j] == ':' && src[j+1] == ':' {
				j += 2
				for j < len(src) && isIdentChar(src[j]) {
					j++
				}
			}
			toks = append(toks, token{tkIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIdentChar(src[j]) && src[j] != '%' && src[j] != '$') {
				j++
			}
			// exponent sign: 1e-5
			for j+1 < len(src) && (src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E') &&
				!strings.HasPrefix(src[i:], "0f") && !strings.HasPrefix(src[i:], "0d") && !strings.HasPrefix(src[i:], "0x") &&
				!strings.HasPrefix(src[i:], "0F") && !strings.HasPrefix(src[i:], "0D") && !strings.HasPrefix(src[i:], "0X") {
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			toks = append(toks, token{tkNumber, src[i:j], line})
			i = j
		case strings.IndexByte(",;:{}[]()+-<>@!=|", c) >= 0:
			toks = append(toks, token{tkPunct, string(c), line})
			i++
		default:
			return nil, fmt.Errorf("ptx: line %d: unexpected character %q", line, c)
		}
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '%' || c == '.'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}
