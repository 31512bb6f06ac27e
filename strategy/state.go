package strategy

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// A Strategy's MarshalBinary holds what its Steps changed — counters,
// barriers, momenta, the devices still in the run — and never what New
// derives from the Config: a snapshot is restored, by UnmarshalBinary, into a
// strategy built by New from the same Config, which then answers the events
// that follow as the strategy that was saved would. Checkpoints are made of
// them (package engine); the conformance suite (strategytest) restores every
// strategy at several points of its runs and compares what follows.

// EncodeState encodes v, a struct with exported fields (or a value gob
// encodes), for a strategy's MarshalBinary. Floats keep their exact bits,
// NaN included.
func EncodeState(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("strategy: encoding a %T state: %w", v, err)
	}
	return b.Bytes(), nil
}

// DecodeState decodes what EncodeState wrote into v, a pointer to a zero
// value of the same type, for a strategy's UnmarshalBinary. Zero fields are
// not encoded, so v must start zero for them to come back zero.
func DecodeState(b []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("strategy: decoding a %T state: %w", v, err)
	}
	return nil
}

// Len is the length of a decoded per-device slice, named for errors.
type Len struct {
	What string
	N    int
}

// CheckLens reports the first decoded per-device slice whose length is not
// the strategy's number of devices: a snapshot of another configuration.
func CheckLens(devices int, lens ...Len) error {
	for _, l := range lens {
		if l.N != devices {
			return fmt.Errorf("strategy: a snapshot with %s of %d devices, for a strategy of %d", l.What, l.N, devices)
		}
	}
	return nil
}

// Devices returns the number of devices m was made for.
func (m *Members) Devices() int { return len(m.gone) }

type membersState struct {
	Gone []bool
	Live int
}

// MarshalBinary implements encoding.BinaryMarshaler for snapshots.
func (m Members) MarshalBinary() ([]byte, error) {
	return EncodeState(membersState{Gone: m.gone, Live: m.live})
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler.
func (m *Members) UnmarshalBinary(b []byte) error {
	var s membersState
	if err := DecodeState(b, &s); err != nil {
		return err
	}
	gone := append([]bool{}, s.Gone...)
	live := 0
	for _, g := range gone {
		if !g {
			live++
		}
	}
	if live != s.Live {
		return fmt.Errorf("strategy: a snapshot of members with %d live devices listing %d", s.Live, live)
	}
	m.gone, m.live = gone, live
	return nil
}

// Devices returns the number of devices b was made for.
func (b *Barrier) Devices() int { return len(b.waiting) }

type barrierState struct {
	Waiting []bool
	Pending int
}

// MarshalBinary implements encoding.BinaryMarshaler for snapshots.
func (b Barrier) MarshalBinary() ([]byte, error) {
	return EncodeState(barrierState{Waiting: b.waiting, Pending: b.pending})
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler.
func (b *Barrier) UnmarshalBinary(data []byte) error {
	var s barrierState
	if err := DecodeState(data, &s); err != nil {
		return err
	}
	b.waiting, b.pending = append([]bool{}, s.Waiting...), s.Pending
	return nil
}
