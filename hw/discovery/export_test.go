package discovery

// NodeReplacementSeen is nodeReplacementSeen, for the external tests.
const NodeReplacementSeen = nodeReplacementSeen
