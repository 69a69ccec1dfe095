package accounting

import (
	"encoding/binary"
	"time"
)

// The allocation log's format (version 2); ReadLog's comment describes it.

// logMagic starts every allocation log; the version byte follows it.
const logMagic = "CUALLOG"

// LogVersion is the version of the allocation log that Record writes;
// ReadLog reads it and version 1, whose tags hold the kinds up to IPC.
const LogVersion = 2

// kindEscape, in a tag's kind bits (version 2), says that the kind is the
// byte after the tag: the kinds from IPC on (StreamOrdered, ...) do not
// fit in three bits.
const kindEscape = 7

// appendTag appends a record's tag byte with kind k in it, and the kind's
// own byte after it when it does not fit.
func appendTag(b []byte, tag byte, k Kind) []byte {
	if k < kindEscape {
		return append(b, tag|byte(k)<<3)
	}
	return append(b, tag|kindEscape<<3, byte(k))
}

// logOp is a record's type, in the low three bits of its tag byte.
type logOp uint8

const (
	logAlloc   logOp = 1
	logFree    logOp = 2
	logFailed  logOp = 3
	logScope   logOp = 4
	logSegment logOp = 5
)

// The flag bits of a tag byte: bits 0–2 are the logOp, bits 3–5 the Kind.
const (
	tagOp     = 0x07
	tagStream = 0x40 // a stream number follows the record's fields
	tagBlock  = 0x80 // a caching allocator's block (NoteBlockAlloc, NoteBlockFree)
)

// appendLogHeader appends the log's header: magic, version, the ledger's
// name and the recording's start.
func appendLogHeader(b []byte, name string, start time.Time) []byte {
	b = append(b, logMagic...)
	b = append(b, LogVersion)
	b = appendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	return binary.AppendVarint(b, start.UnixNano())
}

func appendUvarint(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }
