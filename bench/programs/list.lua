-- list: build a 1,000,000-element linked list, map (+1) over it, sum it;
-- 5 times.  Lua has no cons cells, so a cell is a 2-slot table {car, cdr}
-- (same algorithm as the Lisp version: one allocation per element).
local function build_list(n)
  local l = nil
  for i = 0, n - 1 do l = {i, l} end
  return l
end

-- non-destructive map building a fresh list in order (like mapcar)
local function map_list(f, l)
  if l == nil then return nil end
  local head = {f(l[1]), nil}
  local tail = head
  l = l[2]
  while l ~= nil do
    local cell = {f(l[1]), nil}
    tail[2] = cell
    tail = cell
    l = l[2]
  end
  return head
end

local function sum_list(l)
  local s = 0
  while l ~= nil do s = s + l[1]; l = l[2] end
  return s
end

local function inc(x) return x + 1 end

local total = 0
for _ = 1, 5 do total = total + sum_list(map_list(inc, build_list(1000000))) end
print(total)
