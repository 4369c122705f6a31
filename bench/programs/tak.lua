-- tak: tak(18, 12, 6) repeated 65 times, results summed.
local function tak(x, y, z)
  if not (y < x) then return z end
  return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
end

local sum = 0
for _ = 1, 65 do sum = sum + tak(18, 12, 6) end
print(sum)
