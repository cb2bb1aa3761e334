-- durable_marker_once.lua: write the durable marker and delete it in one step (replicated as
-- both writes), for the node importing the marker's slot (durable.go, confirmMarker).
-- KEYS[1] marker string  <p>:v1:durable:{<tag>}
-- ARGV[1] the marker's TTL in ms
-- Reply: 1
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('DEL', KEYS[1])
return 1
