package redisstore

import (
	"errors"
	"fmt"
)

// The admission step's part of the replies of the scripts run behind it
// (lua/admission.lua's admit(): tick.lua, ingest.lua, release.lua), and the
// lists those replies are made of.

// admitReply is what admit() changed: the end of the holds it gave, the
// users it admitted, the holders it expired (their recorded stay ended).
type admitReply struct {
	expiresAt int64
	admitted  []admittedUser
	expired   []string
}

// decodeAdmit reads admit()'s part of a reply: expiresAt, the admitted
// triples (user, place score, served mark), the expired users.
func decodeAdmit(expires, adm, expired any) (admitReply, error) {
	var a admitReply
	a.expiresAt, _ = expires.(int64)
	var err1, err2 error
	a.admitted, err1 = triples(adm)
	for i := range a.admitted {
		a.admitted[i].expires = a.expiresAt
	}
	a.expired, err2 = users(expired)
	return a, errors.Join(err1, err2)
}

// changes are a's changes in event, to record.
func (a admitReply) changes(event string) changes {
	return changes{event: event, admitted: a.admitted, ended: a.expired}
}

// triples reads a script's flat list of triples (user, a, b).
func triples(v any) ([]admittedUser, error) {
	l, ok := v.([]any)
	if !ok || len(l)%3 != 0 {
		return nil, fmt.Errorf("not a list of triples: %v", v)
	}
	out := make([]admittedUser, 0, len(l)/3)
	for i := 0; i < len(l); i += 3 {
		u, ok1 := l[i].(string)
		a, ok2 := l[i+1].(int64)
		b, ok3 := l[i+2].(int64)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("bad triple %v", l[i:i+3])
		}
		out = append(out, admittedUser{user: u, score: a, served: b})
	}
	return out, nil
}

// quads reads a script's flat list of quads user, place score, an end
// (as expires), served mark: away_lib.lua's calls.
func quads(v any) ([]admittedUser, error) {
	l, ok := v.([]any)
	if !ok || len(l)%4 != 0 {
		return nil, fmt.Errorf("not a list of quads: %v", v)
	}
	out := make([]admittedUser, 0, len(l)/4)
	for i := 0; i < len(l); i += 4 {
		u, ok1 := l[i].(string)
		a, ok2 := l[i+1].(int64)
		e, ok3 := l[i+2].(int64)
		b, ok4 := l[i+3].(int64)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("bad quad %v", l[i:i+4])
		}
		out = append(out, admittedUser{user: u, score: a, expires: e, served: b})
	}
	return out, nil
}

// users reads a script's list of user ids.
func users(v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list of users: %v", v)
	}
	out := make([]string, len(l))
	for i, u := range l {
		if out[i], ok = u.(string); !ok {
			return nil, fmt.Errorf("not a user id: %v", u)
		}
	}
	return out, nil
}
