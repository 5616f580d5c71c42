// Package membership will hold huddle's view-synchronous group membership
// (join, leave, failure detection, flush, merge), total and safe delivery,
// and the Group API that applications, election and mutex use: named
// services, Multicast and Send with contexts, an events channel of views and
// deliveries. See DESIGN.md, section "membership". It is built on package
// multicast and has no code yet.
package membership
