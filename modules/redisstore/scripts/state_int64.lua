-- fits reports whether stored + delta, both int64 in decimal, is an int64
-- too. Lua's numbers are doubles, exact only below 2^53, so sums that may
-- be larger are added as digit strings.
local INT64_MAX, INT64_MIN_ABS = '9223372036854775807', '9223372036854775808'

local function add_digits(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry + (i > 0 and a:byte(i) - 48 or 0) + (j > 0 and b:byte(j) - 48 or 0)
    out[#out + 1] = string.char(48 + d % 10)
    carry = (d >= 10) and 1 or 0
    i, j = i - 1, j - 1
  end
  return string.reverse(table.concat(out))
end

local function fits(stored, delta)
  -- Fifteen characters, sign included, stay below 10^15 < 2^53.
  if #stored < 16 and #delta < 16 then
    return true
  end
  local sneg, dneg = stored:sub(1, 1) == '-', delta:sub(1, 1) == '-'
  if delta == '0' or stored == '0' or sneg ~= dneg then
    return true
  end
  local sum = add_digits(sneg and stored:sub(2) or stored, dneg and delta:sub(2) or delta)
  local limit = dneg and INT64_MIN_ABS or INT64_MAX
  return #sum < #limit or (#sum == #limit and sum <= limit)
end

-- below reports whether a is less than b, both integers in decimal
-- (fences and nanosecond times: exact where Lua's doubles are not).
local function below(a, b)
  local an, bn = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if an ~= bn then
    return an
  end
  if an then
    a, b = b:sub(2), a:sub(2)
  end
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
