// Package cluster carries a hapticd lab across hosts: nodes (--role node)
// own devices and their real-time loops; a gateway (--role gateway) serves
// every node's devices to clients as if they were its own.
//
// # Membership
//
// Membership is protoactor's remote with a static peer list, not its
// cluster providers: the automanaged provider binds all interfaces on its
// health port and panics on a client's Shutdown, and a hapticd lab needs no
// placement (a device lives where its cable is). The gateway sends
// Subscribe to each peer every SubscribeEvery; a node answers with its
// Inventory and pushes a StateBatch of every device to each gateway heard
// from within GatewayTimeout. The gateway watches each node's actor, so a
// node whose connection closes (killed, restarted) is dropped at once; the
// batches are the node's heartbeat, so a node silent for NodeTimeout (hung,
// cut off) is dropped then. A dropped node's devices leave the gateway with
// device-disconnected.
//
// # Data plane
//
// On the gateway each remote device is an ordinary actors device whose
// driver is a proxy: Exchange reads the latest pushed state and forwards the
// loop's output command one-way to the node, which writes it into the
// device's command register under its own lease (LeaseMs). No tick waits on
// the network, and a lost link or gateway ramps the force to zero on the
// node as a quiet client does.
//
// # Short ids
//
// Haply ids are 16 bits and repeat across a lab. A device keeps its own id
// unless a device already on the gateway holds it; newcomers are taken in
// UUID order, and one whose id is taken gets an id derived from its UUID
// (FNV-1a folded to 16 bits, counting up past ids in use). A device keeps its
// gateway id while it stays connected; the UUID is the identity.
//
// # Concurrency
//
// Remote messages arrive on one actor per process; the gateway's maps are
// guarded by one mutex never held across a registry request.
package cluster
