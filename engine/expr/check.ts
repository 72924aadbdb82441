/** Load-time checks of value expressions: unknown operators, missing options, bad patterns. Pure. */
import { isObject } from '../util/json-path.js';
import { didYouMean } from '../util/suggest.js';
import { OPERATORS, OPERATOR_OPTIONS, operatorOf } from './evaluate.js';

export interface ExprProblem {
  path: string[];
  message: string;
  hint?: string;
}

export interface ExprRules {
  /** Operators allowed here (e.g. no $arg outside effects). */
  allow?: readonly string[];
  secrets?: readonly string[];
}

export function checkExpression(expr: unknown, rules: ExprRules = {}, path: string[] = []): ExprProblem[] {
  const problems: ExprProblem[] = [];
  if (Array.isArray(expr)) {
    expr.forEach((item, index) => problems.push(...checkExpression(item, rules, [...path, String(index)])));
    return problems;
  }
  if (!isObject(expr)) return problems;
  const dollars = Object.keys(expr).filter((key) => key.startsWith('$'));
  if (dollars.length === 0) {
    for (const [key, value] of Object.entries(expr)) problems.push(...checkExpression(value, rules, [...path, key]));
    return problems;
  }
  if (dollars.length > 1) return [{ path, message: `an expression has one operator, found ${dollars.join(' and ')}` }];
  const operator = operatorOf(expr);
  if (!operator) {
    const hint = didYouMean(dollars[0]!, OPERATORS);
    return [
      {
        path: [...path, dollars[0]!],
        message: `unknown expression operator "${dollars[0]}"`,
        ...(hint ? { hint } : { hint: `operators: ${OPERATORS.join(', ')}` }),
      },
    ];
  }
  if (rules.allow && !rules.allow.includes(operator)) {
    return [{ path: [...path, operator], message: `${operator} cannot be used here`, hint: `allowed here: ${rules.allow.join(', ')}` }];
  }
  for (const key of Object.keys(expr)) {
    if (key === operator) continue;
    if (!OPERATOR_OPTIONS[operator].includes(key)) {
      problems.push({
        path: [...path, key],
        message: `${operator} does not take "${key}"`,
        ...(OPERATOR_OPTIONS[operator].length ? { hint: `it takes: ${OPERATOR_OPTIONS[operator].join(', ')}` } : {}),
      });
    }
  }
  const argument = expr[operator];
  const needString = ['$field', '$arg', '$count', '$lookup', '$template', '$hmac', '$match', '$pairs'];
  if (needString.includes(operator) && (typeof argument !== 'string' || argument === '')) {
    problems.push({ path: [...path, operator], message: `${operator} needs a non-empty string` });
  }
  if (operator === '$lookup' && !isObject(expr['map'])) problems.push({ path, message: '$lookup needs a map' });
  if (operator === '$hmac') {
    if (typeof expr['message'] !== 'string') problems.push({ path, message: '$hmac needs a message template' });
    if (rules.secrets && typeof argument === 'string' && !rules.secrets.includes(argument)) {
      const hint = didYouMean(argument, rules.secrets);
      problems.push({
        path: [...path, operator],
        message: `unknown secret "${argument}"`,
        ...(hint ? { hint } : { hint: 'declare it under secrets: in pipeline.yaml' }),
      });
    }
  }
  for (const [option, key] of [
    ['pattern', '$match'],
    ['line', '$pairs'],
    ['item', '$pairs'],
  ] as const) {
    if (operator !== key) continue;
    const pattern = expr[option];
    if (typeof pattern !== 'string') {
      problems.push({ path, message: `${key} needs ${option}` });
      continue;
    }
    try {
      new RegExp(pattern);
    } catch (error) {
      problems.push({ path: [...path, option], message: `invalid regular expression: ${(error as Error).message}` });
    }
  }
  if (operator === '$keys') problems.push(...checkExpression(argument, rules, [...path, operator]));
  if (operator === '$first') {
    if (!Array.isArray(argument)) problems.push({ path: [...path, operator], message: '$first needs a list' });
    else problems.push(...checkExpression(argument, rules, [...path, operator]));
  }
  return problems;
}
