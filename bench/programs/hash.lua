-- hash: 1,000,000 inserts (keys i*31, sparse so they land in the hash part
-- of the table, not the array part) and 1,000,000 lookups, summing values.
local n = 1000000
local h = {}
for i = 0, n - 1 do h[i * 31] = i end
local sum = 0
for i = 0, n - 1 do sum = sum + h[i * 31] end
print(sum)
