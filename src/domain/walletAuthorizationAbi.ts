// Paying with a wallet (issue 45), as data: the contract calls the hot wallet submits (EIP-3009 on the token, Permit2's witness transfer) and the EIP-712 types the payer signs.

/** Permit2's canonical address, the same on every EVM network it is deployed to. */
export const PERMIT2_ADDRESS = "0x000000000022D473030F116dDEE9F6B43aC78BA3" as const;

/**
 * EIP-3009 on the token (USDC's FiatTokenV2_2): the `bytes signature` overload, which also takes an
 * EIP-1271 smart wallet's signature, and the (v, r, s) one every EIP-3009 token has (the hot wallet
 * submits with it); `to` must be the caller, so only the hot wallet can submit.
 */
export const eip3009Abi = [
  {
    type: "function",
    name: "receiveWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" },
      { name: "r", type: "bytes32" },
      { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "receiveWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [],
  },
  {
    // x402's exact scheme (product §28): the payer signs TransferWithAuthorization, `to` the hot wallet; anyone may submit it.
    type: "function",
    name: "transferWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" },
      { name: "r", type: "bytes32" },
      { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
    ],
    outputs: [{ name: "", type: "bool" }],
  },
  {
    type: "event",
    name: "AuthorizationUsed",
    inputs: [
      { name: "authorizer", type: "address", indexed: true },
      { name: "nonce", type: "bytes32", indexed: true },
    ],
    anonymous: false,
  },
] as const;

/** Permit2's SignatureTransfer with a witness, and the bitmap of the owner's used nonces. */
export const permit2Abi = [
  {
    type: "function",
    name: "permitWitnessTransferFrom",
    stateMutability: "nonpayable",
    inputs: [
      {
        name: "permit",
        type: "tuple",
        components: [
          {
            name: "permitted",
            type: "tuple",
            components: [
              { name: "token", type: "address" },
              { name: "amount", type: "uint256" },
            ],
          },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      {
        name: "transferDetails",
        type: "tuple",
        components: [
          { name: "to", type: "address" },
          { name: "requestedAmount", type: "uint256" },
        ],
      },
      { name: "owner", type: "address" },
      { name: "witness", type: "bytes32" },
      { name: "witnessTypeString", type: "string" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [],
  },
  {
    // Bit (nonce & 255) of word (nonce >> 8) is set once the owner's nonce is used.
    type: "function",
    name: "nonceBitmap",
    stateMutability: "view",
    inputs: [
      { name: "owner", type: "address" },
      { name: "wordPosition", type: "uint256" },
    ],
    outputs: [{ name: "", type: "uint256" }],
  },
  {
    type: "function",
    name: "DOMAIN_SEPARATOR",
    stateMutability: "view",
    inputs: [],
    outputs: [{ name: "", type: "bytes32" }],
  },
] as const;

/**
 * What Permit2 appends to "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,
 * uint256 nonce,uint256 deadline," to make the signed type: the witness field, then the referenced
 * types in alphabetical order, as EIP-712 encodes them.
 */
export const INVOICE_WITNESS_TYPE_STRING =
  "Invoice witness)Invoice(string id)TokenPermissions(address token,uint256 amount)" as const;

/** What the catalog's EIP-3009 domain is checked against: ERC-5267's `eip712Domain()`, else `name()` and `version()`. */
export const tokenDomainAbi = [
  {
    type: "function",
    name: "eip712Domain",
    stateMutability: "view",
    inputs: [],
    outputs: [
      { name: "fields", type: "bytes1" },
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
      { name: "salt", type: "bytes32" },
      { name: "extensions", type: "uint256[]" },
    ],
  },
  { type: "function", name: "name", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
] as const;

/** The EIP-712 types of an EIP-3009 ReceiveWithAuthorization (the domain is the token's name and version). */
export const receiveWithAuthorizationTypes = {
  EIP712Domain: [
    { name: "name", type: "string" },
    { name: "version", type: "string" },
    { name: "chainId", type: "uint256" },
    { name: "verifyingContract", type: "address" },
  ],
  ReceiveWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** The EIP-712 types of an EIP-3009 TransferWithAuthorization, what x402's exact scheme signs (the same fields as ReceiveWithAuthorization). */
export const transferWithAuthorizationTypes = {
  EIP712Domain: receiveWithAuthorizationTypes.EIP712Domain,
  TransferWithAuthorization: receiveWithAuthorizationTypes.ReceiveWithAuthorization,
} as const;

/** The EIP-712 types of a Permit2 PermitWitnessTransferFrom whose witness is the invoice (Permit2's domain has no version). */
export const permitWitnessTransferFromTypes = {
  EIP712Domain: [
    { name: "name", type: "string" },
    { name: "chainId", type: "uint256" },
    { name: "verifyingContract", type: "address" },
  ],
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: "Invoice" },
  ],
  TokenPermissions: [
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
  ],
  Invoice: [{ name: "id", type: "string" }],
} as const;

/** The witness's own type: Permit2 is given keccak256(abi.encode(keccak256("Invoice(string id)"), keccak256(id))). */
export const invoiceWitnessTypes = { Invoice: [{ name: "id", type: "string" }] } as const;
