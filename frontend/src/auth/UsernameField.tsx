// The username input of the forms that name an account (add a member, create an account): the API's rules
// (2–64 characters, lower-case letters, digits, '.', '_' and '-'), no autocorrection.
export function UsernameField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  return (
    <label>
      Username
      <input
        value={value}
        required
        minLength={2}
        maxLength={64}
        autoCapitalize="none"
        spellCheck={false}
        autoComplete="off"
        onChange={(e) => {
          onChange(e.target.value);
        }}
      />
    </label>
  );
}
