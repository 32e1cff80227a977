// The shard ring (SPEC §6): which store shard a key belongs to, and the ring in use.
export { murmur3_32, murmur3_32Utf8, fmix32 } from './murmur3.ts';
export { ShardRing, RingMembersError, keyHash, memberSeed, score, type RingMember, type RingKey } from './shard-ring.ts';
export { RingHolder } from './ring-holder.ts';
export { RingMembership, type RingMembershipOptions, type RingChange } from './ring-membership.ts';
