-- strings: 200,000 formatted strings "item-<i>" appended to a buffer
-- (Lua's string-stream idiom: a table of pieces + table.concat); print the
-- final length.
local n = 200000
local buf = {}
for i = 0, n - 1 do buf[#buf + 1] = string.format("%s-%d", "item", i) end
print(#table.concat(buf))
